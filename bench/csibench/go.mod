module blockpool.dev/bench/csibench

go 1.25.0

require (
	github.com/container-storage-interface/spec v1.12.0
	golang.org/x/sys v0.46.0
	google.golang.org/grpc v1.83.1
	google.golang.org/protobuf v1.36.11
)

require (
	golang.org/x/net v0.55.0 // indirect
	golang.org/x/text v0.37.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260526163538-3dc84a4a5aaa // indirect
)
