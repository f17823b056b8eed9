// registrar is a minimal stand-in for node-driver-registrar (not published as a Go module):
// it asks the driver for its name over CSI, then serves kubelet's plugin registration API
// (pluginregistration/v1) on <plugin-registration-path>/<driver>-reg.sock, where kubelet's
// plugin watcher finds it, and points kubelet at the driver's socket. Its flags are those of
// node-driver-registrar that the project's manifests use.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

type server struct {
	registerapi.UnimplementedRegistrationServer
	driver, endpoint string
	registered       atomic.Bool
	failed           chan string
}

func (s *server) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	log.Printf("kubelet asked GetInfo: %s at %s", s.driver, s.endpoint)
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              s.driver,
		Endpoint:          s.endpoint,
		SupportedVersions: []string{"1.0.0"},
	}, nil
}

func (s *server) NotifyRegistrationStatus(_ context.Context, st *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if !st.PluginRegistered {
		log.Printf("kubelet rejected the registration: %s", st.Error)
		s.failed <- st.Error
	} else {
		log.Printf("kubelet registered %s", s.driver)
		s.registered.Store(true)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

func main() {
	csiAddress := flag.String("csi-address", "/csi/csi.sock", "the driver's socket as this process reaches it")
	kubeletPath := flag.String("kubelet-registration-path", "", "the driver's socket as kubelet reaches it")
	registrationDir := flag.String("plugin-registration-path", "/registration", "kubelet's plugins_registry directory")
	httpEndpoint := flag.String("http-endpoint", "", "serve /healthz here: OK once kubelet accepted the registration")
	flag.Parse()
	if *kubeletPath == "" {
		log.Fatal("--kubelet-registration-path is required")
	}

	driver := driverName(*csiAddress)
	s := &server{driver: driver, endpoint: *kubeletPath, failed: make(chan string, 1)}
	socket := filepath.Join(*registrationDir, driver+"-reg.sock")
	_ = os.Remove(socket)
	l, err := net.Listen("unix", socket)
	if err != nil {
		log.Fatalf("listen %s: %v", socket, err)
	}
	g := grpc.NewServer()
	registerapi.RegisterRegistrationServer(g, s)
	go func() { _ = g.Serve(l) }()
	log.Printf("serving plugin registration for %s on %s", driver, socket)

	if *httpEndpoint != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
			if !s.registered.Load() {
				http.Error(w, "not registered with kubelet", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, "ok")
		})
		go func() { log.Fatal(http.ListenAndServe(*httpEndpoint, mux)) }()
	}

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-stop:
	case msg := <-s.failed:
		// As node-driver-registrar does: exit, so a supervisor restarts and retries.
		g.Stop()
		_ = os.Remove(socket)
		log.Fatalf("registration failed: %s", msg)
	}
	g.Stop()
	_ = os.Remove(socket) // kubelet's plugin watcher deregisters the driver when it goes
}

// driverName waits for the driver's socket and asks it for its name, as node-driver-registrar does.
func driverName(address string) string {
	conn, err := grpc.NewClient("unix://"+address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatalf("csi address %s: %v", address, err)
	}
	defer conn.Close()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		info, err := csi.NewIdentityClient(conn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
		cancel()
		if err == nil {
			return info.Name
		}
		if time.Now().After(deadline) {
			log.Fatalf("GetPluginInfo on %s: %v", address, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
