// livenessprobe is a minimal stand-in for the kubernetes-csi livenessprobe sidecar (not
// published as a Go module): it serves GET /healthz on --health-port, which calls the driver's
// CSI Probe within --probe-timeout and answers 200 when the driver is ready, 500 with the reason
// otherwise, so that a liveness probe pointed at it restarts a driver that stopped answering.
// Its flags are those of livenessprobe that the project's manifests use.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func main() {
	csiAddress := flag.String("csi-address", "/run/csi/socket", "the driver's socket")
	healthPort := flag.Int("health-port", 9808, "TCP port for /healthz")
	probeTimeout := flag.Duration("probe-timeout", time.Second, "how long the driver's Probe may take")
	flag.Parse()

	// The connection is made lazily and remade by gRPC after the driver restarts.
	conn, err := grpc.NewClient("unix://"+*csiAddress, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatalf("csi address %s: %v", *csiAddress, err)
	}
	identity := csi.NewIdentityClient(conn)
	http.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), *probeTimeout)
		defer cancel()
		resp, err := identity.Probe(ctx, &csi.ProbeRequest{})
		switch {
		case err != nil:
			http.Error(w, fmt.Sprintf("Probe of %s: %v", *csiAddress, err), http.StatusInternalServerError)
		case resp.GetReady() != nil && !resp.GetReady().GetValue():
			http.Error(w, "the driver is not ready", http.StatusInternalServerError)
		default:
			fmt.Fprintln(w, "ok")
		}
	})
	address := fmt.Sprintf(":%d", *healthPort)
	log.Printf("serving /healthz on %s, probing %s", address, *csiAddress)
	log.Fatal(http.ListenAndServe(address, nil))
}
