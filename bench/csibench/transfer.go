package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const topologyKey = "topology.blockpool.csi.dev/node"

// sectionTransfer: a snapshot of node a's pool restored on node b through the peer channel (two
// drivers on this machine, each with a pool of its own, mutual TLS over loopback), beside the two
// limits it runs into: the pool disk copying the same image (a sparse copy, no reflink, flushed),
// and the loopback link carrying the same bytes over plain TCP. The three alternate, round by round.
func sectionTransfer() {
	ca := dir("transfer", "ca")
	must(os.RemoveAll(ca))
	run(cfg.driver, "peer-ca", "--out", ca)
	portA, portB := freePort(), freePort()
	a := launchPeer("node-a", portA, "node-b", portB, ca)
	defer a.stop()
	b := launchPeer("node-b", portB, "node-a", portA, ca)
	defer b.stop()

	size := int64(cfg.transferMiB) * mb
	volume := createOn(a, "node-a", &csi.CreateVolumeRequest{Name: "transfer-source",
		CapacityRange: &csi.CapacityRange{RequiredBytes: size}})
	fillRandom(filepath.Join(poolDir("transfer", "node-a"), "volumes", volume+".img"), size)
	ctx, cancel := background()
	snap, err := a.ctl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "transfer-snap", SourceVolumeId: volume})
	cancel()
	must(err)
	image := filepath.Join(poolDir("transfer", "node-a"), "snapshots", snap.Snapshot.SnapshotId+".img")

	var pulled, copied, carried timings
	for r := range cfg.transferRounds {
		name := "transfer-restored-" + strconv.Itoa(r)
		pulled.timed(func() {
			restored := createOn(b, "node-b", &csi.CreateVolumeRequest{Name: name,
				VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
					Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap.Snapshot.SnapshotId}}}})
			b.deleteVolume(restored)
		})
		copy := filepath.Join(poolDir("transfer", "copies"), name+".img")
		copied.timed(func() { sparseCopy(image, copy) })
		must(os.Remove(copy))
		carried.timed(func() { loopbackCopy(size) })
	}
	fmt.Printf("A %d MiB image of random data (every block allocated), from node a's pool to node b's; %d rounds.\n"+
		"The restore is CreateVolume on node b, retried on ABORTED as external-provisioner does, until the\n"+
		"volume is made, then deleted; the disk is `dd conv=sparse,fsync` of the same image within the pool's\n"+
		"filesystem; the link is the same bytes over a loopback TCP connection, without TLS.\n\n", cfg.transferMiB,
		cfg.transferRounds)
	fmt.Println("| path | p50 | max | throughput at p50 | ratio to the disk |")
	fmt.Println("| --- | --- | --- | --- | --- |")
	for _, row := range []struct {
		name string
		t    timings
	}{{"restore on the other node (peer channel)", pulled}, {"the pool disk (sparse copy, flushed)", copied},
		{"the loopback link (plain TCP)", carried}} {
		fmt.Printf("| %s | %s | %s | %.0f MiB/s | ×%.2f |\n", row.name, ms(row.t.q(0.5)), ms(row.t.q(1)),
			float64(size)/float64(mb)/row.t.q(0.5).Seconds(), row.t.q(0.5).Seconds()/copied.q(0.5).Seconds())
	}
}

// launchPeer starts blockpool as node `node` of a node-local pool, serving the peer channel on
// `port` and reaching `other` at `otherPort`.
func launchPeer(node string, port int, other string, otherPort int, ca string) *proc {
	return launchPeerOn(node, port, other, otherPort, ca, poolDir("transfer", node))
}

// createOn makes the volume on `node`, as a claim scheduled there, retrying while a pull is under way.
func createOn(p *proc, node string, req *csi.CreateVolumeRequest) string {
	req.VolumeCapabilities = []*csi.VolumeCapability{ext4Cap()}
	here := &csi.Topology{Segments: map[string]string{topologyKey: node}}
	req.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: []*csi.Topology{here},
		Preferred: []*csi.Topology{here}}
	deadline := time.Now().Add(30 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		resp, err := p.ctl.CreateVolume(ctx, req)
		cancel()
		if err == nil {
			return resp.Volume.VolumeId
		}
		if c := status.Code(err); (c != codes.Aborted && c != codes.DeadlineExceeded) || time.Now().After(deadline) {
			fatalf("CreateVolume %s on %s: %v", req.Name, node, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// fillRandom writes `size` bytes of random data over the image and flushes them.
func fillRandom(image string, size int64) {
	f, err := os.OpenFile(image, os.O_WRONLY, 0)
	must(err)
	defer f.Close()
	_, err = io.CopyN(f, rand.Reader, size)
	must(err)
	must(f.Sync())
}

func sparseCopy(from, to string) {
	run("dd", "if="+from, "of="+to, "bs=1M", "conv=sparse,fsync", "status=none")
}

// loopbackCopy sends `size` bytes through a loopback TCP connection and waits until all arrived.
func loopbackCopy(size int64) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	defer l.Close()
	done := make(chan int64)
	go func() {
		c, err := l.Accept()
		must(err)
		defer c.Close()
		n, _ := io.Copy(io.Discard, c)
		done <- n
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	must(err)
	buf := make([]byte, mb)
	_, _ = rand.Read(buf)
	for sent := int64(0); sent < size; sent += int64(len(buf)) {
		_, err := c.Write(buf)
		must(err)
	}
	must(c.Close())
	if n := <-done; n != size {
		fatalf("loopback: %d of %d bytes arrived", n, size)
	}
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
