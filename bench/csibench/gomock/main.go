// Command gomock is the benchmark's reference process: a CSI driver in Go that keeps its volumes
// in memory and does no storage work, served by grpc-go on a Unix socket like any CSI driver.
//
// It stands in for the csi-test mock driver (removed from csi-test in v4.3, and csi-test v4 is
// not served by the Go module proxy here) and for csi-driver-host-path (refused by the proxy):
// what start-up, idle memory, memory after a burst and CPU time cost a Go CSI process on the same
// pinned spec and grpc-go versions, with no storage behind it. It is a floor, not a rival driver.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

type driver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer
	mu      sync.Mutex
	volumes map[string]int64 // id -> capacity
}

func main() {
	endpoint := flag.String("endpoint", "", "unix:///path/to/csi.sock")
	flag.Parse()
	path := strings.TrimPrefix(*endpoint, "unix://")
	if path == "" {
		fmt.Fprintln(os.Stderr, "gomock: -endpoint unix:///path is required")
		os.Exit(2)
	}
	_ = os.Remove(path)
	listener, err := net.Listen("unix", path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gomock:", err)
		os.Exit(1)
	}
	d := &driver{volumes: map[string]int64{}}
	server := grpc.NewServer()
	csi.RegisterIdentityServer(server, d)
	csi.RegisterControllerServer(server, d)
	csi.RegisterNodeServer(server, d)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-signals; server.GracefulStop() }()
	if err := server.Serve(listener); err != nil {
		fmt.Fprintln(os.Stderr, "gomock:", err)
		os.Exit(1)
	}
}

func (d *driver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: "gomock.bench.blockpool.dev", VendorVersion: "0.1.0"}, nil
}

func (d *driver) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{{
		Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}},
	}}}, nil
}

func (d *driver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}

func controllerCap(t csi.ControllerServiceCapability_RPC_Type) *csi.ControllerServiceCapability {
	return &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: t}}}
}

func (d *driver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: []*csi.ControllerServiceCapability{
		controllerCap(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME),
		controllerCap(csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME),
		controllerCap(csi.ControllerServiceCapability_RPC_LIST_VOLUMES),
	}}, nil
}

func (d *driver) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name is required")
	}
	size := req.GetCapacityRange().GetRequiredBytes()
	d.mu.Lock()
	d.volumes[req.GetName()] = size
	d.mu.Unlock()
	return &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: req.GetName(), CapacityBytes: size}}, nil
}

func (d *driver) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	d.mu.Lock()
	delete(d.volumes, req.GetVolumeId())
	d.mu.Unlock()
	return &csi.DeleteVolumeResponse{}, nil
}

func (d *driver) ControllerPublishVolume(context.Context, *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	return &csi.ControllerPublishVolumeResponse{}, nil
}

func (d *driver) ControllerUnpublishVolume(context.Context, *csi.ControllerUnpublishVolumeRequest) (*csi.ControllerUnpublishVolumeResponse, error) {
	return &csi.ControllerUnpublishVolumeResponse{}, nil
}

// ListVolumes pages through the volumes in ID order; the token is the index of the next entry.
func (d *driver) ListVolumes(_ context.Context, req *csi.ListVolumesRequest) (*csi.ListVolumesResponse, error) {
	d.mu.Lock()
	ids := make([]string, 0, len(d.volumes))
	for id := range d.volumes {
		ids = append(ids, id)
	}
	sizes := make(map[string]int64, len(ids))
	for _, id := range ids {
		sizes[id] = d.volumes[id]
	}
	d.mu.Unlock()
	sort.Strings(ids)
	from := 0
	if token := req.GetStartingToken(); token != "" {
		n, err := strconv.Atoi(token)
		if err != nil || n < 0 || n > len(ids) {
			return nil, status.Errorf(codes.Aborted, "bad starting token %q", token)
		}
		from = n
	}
	to := len(ids)
	if max := int(req.GetMaxEntries()); max > 0 && from+max < to {
		to = from + max
	}
	resp := &csi.ListVolumesResponse{}
	for _, id := range ids[from:to] {
		resp.Entries = append(resp.Entries, &csi.ListVolumesResponse_Entry{Volume: &csi.Volume{VolumeId: id, CapacityBytes: sizes[id]}})
	}
	if to < len(ids) {
		resp.NextToken = strconv.Itoa(to)
	}
	return resp, nil
}

func nodeCap(t csi.NodeServiceCapability_RPC_Type) *csi.NodeServiceCapability {
	return &csi.NodeServiceCapability{Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: t}}}
}

func (d *driver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{Capabilities: []*csi.NodeServiceCapability{
		nodeCap(csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME),
		nodeCap(csi.NodeServiceCapability_RPC_GET_VOLUME_STATS),
	}}, nil
}

func (d *driver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: "bench-node"}, nil
}

func (d *driver) NodeStageVolume(context.Context, *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	return &csi.NodeStageVolumeResponse{}, nil
}

func (d *driver) NodeUnstageVolume(context.Context, *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	return &csi.NodeUnstageVolumeResponse{}, nil
}

func (d *driver) NodePublishVolume(context.Context, *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	return &csi.NodePublishVolumeResponse{}, nil
}

func (d *driver) NodeUnpublishVolume(context.Context, *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// NodeGetVolumeStats answers what the volume's size says; a real driver would statfs(2) here.
func (d *driver) NodeGetVolumeStats(_ context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	d.mu.Lock()
	size, ok := d.volumes[req.GetVolumeId()]
	d.mu.Unlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "volume %q not found", req.GetVolumeId())
	}
	return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{{Total: size, Available: size, Unit: csi.VolumeUsage_BYTES}}}, nil
}
