package main

import (
	"crypto/rand"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// sectionMove: a volume of random data moved from node a's pool to node b's with blockpool-csi
// move, as an operator runs it on node b: a first round while a writer changes 1 % of the volume
// (in 1 MiB pieces, from 5 s into the round), then --final, the part of a move during which the
// workload is stopped. Both pools are on one XFS with reflinks (the frozen copies share extents),
// made for the section.
func sectionMove() {
	size := int64(cfg.moveGiB) * gib
	root := dir("move")
	xfs := filepath.Join(root, "xfs")
	image := filepath.Join(root, "xfs.img")
	must(os.MkdirAll(xfs, 0o755))
	// Room for what is promised: the volume, its copy on node b, and the two rounds node a keeps
	// frozen, each promised its blocks though a reflink shares them (as a snapshot is).
	run("truncate", "-s", strconv.FormatInt(5*size+4*gib, 10), image)
	loop := strings.TrimSpace(output("losetup", "-f", "--show", image))
	run("mkfs.xfs", "-q", "-m", "reflink=1", loop)
	run("mount", loop, xfs)
	defer func() { _ = exec.Command("umount", xfs).Run(); _ = exec.Command("losetup", "-d", loop).Run() }()

	ca := filepath.Join(root, "ca")
	must(os.RemoveAll(ca))
	run(cfg.driver, "peer-ca", "--out", ca)
	portA, portB := freePort(), freePort()
	poolA, poolB := dirIn(xfs, "node-a"), dirIn(xfs, "node-b")
	a := launchPeerOn("node-a", portA, "node-b", portB, ca, poolA)
	defer a.stop()
	b := launchPeerOn("node-b", portB, "node-a", portA, ca, poolB)
	defer b.stop()

	volume := createOn(a, "node-a", &csi.CreateVolumeRequest{Name: "move-source",
		CapacityRange: &csi.CapacityRange{RequiredBytes: size}})
	source := filepath.Join(poolA, "volumes", volume+".img")
	fillRandom(source, size)
	move := []string{"move", "--pool-dir", poolB, "--node-id", "node-b", "--peer-ca-dir", ca,
		"--from", "node-a=127.0.0.1:" + strconv.Itoa(portA), "--volume", volume}

	changed := size / 100
	writing := make(chan time.Duration)
	began := time.Now()
	// once the round has frozen what it copies: what the writer changes is the next round's
	go func() { time.Sleep(5 * time.Second); writing <- writeScattered(source, size, changed) }()
	run(cfg.driver, append(move, "--rounds", "1")...)
	firstRound := time.Since(began)
	wrote := <-writing
	began = time.Now()
	run(cfg.driver, append(move, "--final")...)
	stop := time.Since(began)
	if _, err := os.Stat(source); !os.IsNotExist(err) {
		fatalf("the source's image %s is still there after --final", source)
	}

	fmt.Printf("A %d GiB volume of random data moved from node a's pool to node b's (both on one XFS with\n"+
		"reflinks); %d MiB of it (1 %%) rewritten in 1 MiB pieces at random offsets, from 5 s into the first round.\n\n",
		cfg.moveGiB, changed/mb)
	fmt.Println("| step | time | throughput |")
	fmt.Println("| --- | --- | --- |")
	fmt.Printf("| first round (`move --rounds 1`), the workload running | %s | %.0f MiB/s |\n", ms(firstRound),
		float64(size)/float64(mb)/firstRound.Seconds())
	fmt.Printf("| the writer's 1 %% during it | %s | |\n", ms(wrote))
	fmt.Printf("| `move --final`, the workload stopped: the last rounds, the commit, the retirement | %s | ×%.3f of the first round |\n",
		ms(stop), stop.Seconds()/firstRound.Seconds())
}

// writeScattered rewrites `total` bytes of the image in 1 MiB pieces at random offsets, flushing
// each; how long it took.
func writeScattered(image string, size, total int64) time.Duration {
	f, err := os.OpenFile(image, os.O_WRONLY, 0)
	must(err)
	defer f.Close()
	began := time.Now()
	pieces := total / mb
	piece := make([]byte, mb)
	for range pieces {
		_, _ = rand.Read(piece)
		at, err := rand.Int(rand.Reader, big.NewInt(size/mb))
		must(err)
		_, err = f.WriteAt(piece, at.Int64()*mb)
		must(err)
		must(f.Sync())
	}
	return time.Since(began)
}

// launchPeerOn starts blockpool as node `node` of a node-local pool at `pool`, serving the peer
// channel on `port` and reaching `other` at `otherPort`.
func launchPeerOn(node string, port int, other string, otherPort int, ca, pool string) *proc {
	launchScope, launchNode = "node", node
	launchArgs = []string{"--peer-listen", "127.0.0.1:" + strconv.Itoa(port), "--peer-ca-dir", ca,
		"--peer", other + "=127.0.0.1:" + strconv.Itoa(otherPort)}
	defer func() { launchScope, launchNode, launchArgs = "shared", "bench-node", nil }()
	return launch(blockpool, "move-"+node, pool)
}

func run(name string, args ...string) {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

func output(name string, args ...string) string {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return string(out)
}
