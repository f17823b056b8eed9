// hollow-node runs kubemark's hollow kubelet as the end-to-end test's node: the real kubelet
// (volume manager, CSI volume plugin, plugin watcher, pod workers) on kubemark's fake container
// runtime, so no container runtime is needed. Unlike kubemark's own hollow node it mounts for
// real: the CSI plugin's stage and publish directories, the fsGroup ownership and the block
// device mappings happen on this host, under --root-dir. It also has what kubemark's hollow node
// leaves out: the FlexVolume plugins of --volume-plugin-dir, probed as kubelet does.
package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/trace/noop"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	remote "k8s.io/cri-client/pkg"
	fakeremote "k8s.io/cri-client/pkg/fake"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet"
	cadvisortest "k8s.io/kubernetes/pkg/kubelet/cadvisor/testing"
	"k8s.io/kubernetes/pkg/kubelet/cm"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"
	"k8s.io/kubernetes/pkg/kubemark"
	"k8s.io/kubernetes/pkg/volume/flexvolume"
	"k8s.io/kubernetes/pkg/volume/util/hostutil"
	"k8s.io/kubernetes/pkg/volume/util/subpath"
	"k8s.io/mount-utils"
	"k8s.io/utils/exec"
)

func main() {
	klog.InitFlags(nil)
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the node's identity (system:node:NAME)")
	nodeName := flag.String("node-name", "e2e-node", "the node's name")
	rootDir := flag.String("root-dir", "", "kubelet's root directory (plugins, plugins_registry, pods)")
	port := flag.Int("port", 10250, "kubelet's HTTPS port on 127.0.0.1")
	volumePluginDir := flag.String("volume-plugin-dir", "", "kubelet's FlexVolume plugin directory "+
		"(<vendor>~<driver>/<driver> executables); none when empty")
	flag.Parse()
	if *kubeconfig == "" || *rootDir == "" {
		klog.Fatal("--kubeconfig and --root-dir are required")
	}

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		klog.Fatalf("kubeconfig: %v", err)
	}
	config.UserAgent = "hollow-kubelet"
	client := clientset.NewForConfigOrDie(config)
	heartbeat := *config
	heartbeat.Timeout = 10 * time.Second
	heartbeat.QPS = -1
	heartbeatClient := clientset.NewForConfigOrDie(&heartbeat)

	// kubemark's settings for a hollow kubelet, with its directories moved under --root-dir
	// (it makes them in /tmp; they are still empty here).
	flags, kc := kubemark.GetHollowKubeletConfig(&kubemark.HollowKubeletOptions{
		NodeName: *nodeName, KubeletPort: *port, MaxPods: 110,
		NodeLabels: map[string]string{"kubernetes.io/hostname": *nodeName},
	})
	_ = os.RemoveAll(flags.RootDirectory)
	flags.RootDirectory = *rootDir
	flags.CertDirectory = filepath.Join(*rootDir, "pki")
	kc.StaticPodPath = mkdir(*rootDir, "static-pods")
	kc.PodLogsDir = mkdir(*rootDir, "pod-logs")
	// kubelet makes its container log directory at a fixed host path unless told otherwise.
	kubelet.ContainerLogsDir = mkdir(*rootDir, "containers")
	kc.Address = "127.0.0.1"
	kc.HealthzPort = 0
	// Attach and detach through the controller (VolumeAttachment), as on a real node.
	kc.EnableControllerAttachDetach = true

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()

	fake := fakeremote.NewFakeRemoteRuntime()
	endpoint := "unix://" + filepath.Join(*rootDir, "fake-cri.sock")
	if err := fake.Start(endpoint); err != nil {
		klog.Fatalf("fake runtime: %v", err)
	}
	defer fake.Stop()
	runtime, err := remote.NewRemoteRuntimeService(ctx, endpoint, 15*time.Second, noop.NewTracerProvider(), false)
	if err != nil {
		klog.Fatalf("runtime service: %v", err)
	}

	hollow := kubemark.NewHollowKubelet(flags, kc, client, heartbeatClient,
		&cadvisortest.Fake{NodeName: *nodeName}, fake.ImageService, runtime, cm.NewStubContainerManager())
	// The real host: mounts, bind mounts, device checks and ownership changes all happen.
	hollow.KubeletDeps.Mounter = mount.New("")
	hollow.KubeletDeps.HostUtil = hostutil.NewHostUtil()
	hollow.KubeletDeps.Subpather = subpath.New(hollow.KubeletDeps.Mounter)
	hollow.KubeletDeps.OSInterface = &kubecontainer.RealOS{}
	if *volumePluginDir != "" {
		// What kubelet's own --volume-plugin-dir sets up: FlexVolume drivers found (and
		// watched for) in that directory and run on the host.
		kc.VolumePluginDir = *volumePluginDir
		hollow.KubeletDeps.DynamicPluginProber = flexvolume.GetDynamicPluginProber(ctx, *volumePluginDir, exec.New())
	}

	go hollow.Run(ctx)
	<-ctx.Done()
	klog.Info("hollow-node: stopping")
}

func mkdir(parent, name string) string {
	dir := filepath.Join(parent, name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		klog.Fatalf("%v", err)
	}
	return dir
}
