package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"blockpool.dev/bench/csibench/results"
)

// nodeCallOps are the node calls the hostpath section times, in the order a pod's volume meets them.
var nodeCallOps = []string{"NodeStageVolume", "NodePublishVolume", "NodeGetVolumeStats", "NodeUnpublishVolume", "NodeUnstageVolume"}

// nodeCallDriver is one driver of the hostpath section and its timings, by operation.
type nodeCallDriver struct {
	name string
	kind kind
	ops  map[string]timings
}

// sectionHostpath: the node calls of blockpool beside csi-driver-host-path, the reference driver
// of kubernetes-csi, on the same flow of fresh 1 GiB ext4 volumes; each driver fresh in each
// round and the two alternating, so that the machine's load falls on both alike.
func sectionHostpath() {
	if cfg.hostpath == "" {
		fatalf("-hostpath BINARY is required for the hostpath section: csi-driver-host-path, built as docs/performance-benchmark.md says")
	}
	drivers := []*nodeCallDriver{{name: "blockpool", kind: blockpool}, {name: "csi-driver-host-path", kind: hostpath}}
	for _, d := range drivers {
		d.ops = map[string]timings{}
	}
	var fails failures
	for r := range cfg.hostpathRounds {
		for i, d := range drivers {
			tag := fmt.Sprintf("hostpath-%d-%d", r, i)
			p := launch(d.kind, tag, dir("hostpath", tag, "pool"))
			time.Sleep(cfg.settle) // as in the node section: kubelet calls only after registration
			nodeCalls(p, tag, d.ops, &fails)
			p.stop()
		}
	}

	fmt.Printf("Each driver fresh in each of %d rounds, the two alternating, idle for %v after ready; in each round %d fresh\n"+
		"1 GiB ext4 volumes (CreateVolume + ControllerPublishVolume not timed), each staged, then %d times published to a\n"+
		"fresh target, its stats read and unpublished, then unstaged. csi-driver-host-path runs with -enable-attach; its\n"+
		"mount volumes are directories in its state directory, so its stage and unstage only record the path, and\n"+
		"its publish is a bind mount of that directory, where blockpool's stage attaches a loop device, makes the\n"+
		"filesystem and mounts it.\n\n",
		cfg.hostpathRounds, cfg.settle, cfg.hostpathVolumes, cfg.hostpathPublishes)
	blockpoolOps, reference := drivers[0].ops, drivers[1].ops
	var rows [][]string
	for _, op := range nodeCallOps {
		b, h := blockpoolOps[op], reference[op]
		rows = append(rows, []string{op, strconv.Itoa(len(b)), ms(b.q(.5)), ms(b.q(.9)), ms(b.q(.99)),
			ms(h.q(.5)), ms(h.q(.9)), ms(h.q(.99)), ratio(float64(b.q(.5)), float64(h.q(.5)))})
		for _, d := range drivers {
			recorded.NodeCalls = append(recorded.NodeCalls, latencyOf(d.name, op, d.ops[op]))
		}
	}
	table([]string{"operation", "n", "blockpool p50", "p90", "p99", "host-path p50", "p90", "p99", "blockpool / host-path (p50)"}, rows)
	fails.report()
}

// nodeCalls stages fresh volumes and publishes each to fresh targets, timing every node call.
func nodeCalls(p *proc, tag string, ops map[string]timings, fails *failures) {
	timed := func(op string, f func() error) {
		t := ops[op]
		t.timedOrRetried(fails, f)
		ops[op] = t
	}
	targets := dir("hostpath", tag, "targets") // a pod's volume directory; each driver makes the target in it
	for v := range cfg.hostpathVolumes {
		vol := p.attach(tag+"-"+strconv.Itoa(v), gib, ext4Cap())
		staging := dir("hostpath", tag, "staging", strconv.Itoa(v))
		timed("NodeStageVolume", func() error { return vol.tryStage(staging) })
		for i := range cfg.hostpathPublishes {
			target := filepath.Join(targets, fmt.Sprintf("v%d-t%d", v, i))
			timed("NodePublishVolume", func() error { return vol.tryPublish(target) })
			timed("NodeGetVolumeStats", func() error { return vol.tryStats(target) })
			timed("NodeUnpublishVolume", func() error { return vol.tryUnpublish(target) })
		}
		timed("NodeUnstageVolume", vol.tryUnstage)
		vol.detach()
	}
}

// latencyOf is a series' record for the figures, in milliseconds.
func latencyOf(process, operation string, t timings) results.Latency {
	return results.Latency{Process: process, Operation: operation, N: len(t),
		P50: millis(t.q(.5)), P90: millis(t.q(.9)), P99: millis(t.q(.99))}
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
