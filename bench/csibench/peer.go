package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// peerBuild is one process measured in the peer section: this build, another build's jar
// (-old-jar), or csi-driver-host-path.
type peerBuild struct {
	name string
	kind kind
	jar  string
	ops  map[string]timings
	// threads and RSS after a burst of concurrent calls, and again once the driver was idle
	threadsBusy, threadsIdle, rssBusy, rssIdle []int64
}

var peerOps = []string{"Probe", "CreateVolume", "ControllerPublishVolume", "ControllerUnpublishVolume", "DeleteVolume"}

// peerIdle is how long a driver is left without calls before its idle threads are counted: past
// the 10 s after which blockpool's call and system-call threads end.
const peerIdle = 15 * time.Second

// sectionPeer: the controller calls and Probe of blockpool beside csi-driver-host-path, the
// reference driver of kubernetes-csi, one client calling sequentially, each driver fresh in each
// round and the builds alternating; then what a burst of concurrent calls leaves behind in
// threads and memory, right after it and once the driver was idle.
func sectionPeer() {
	builds := []*peerBuild{{name: "blockpool", kind: blockpool}}
	if cfg.oldJar != "" {
		builds = append(builds, &peerBuild{name: "blockpool -old-jar", kind: blockpool, jar: cfg.oldJar})
	}
	builds = append(builds, &peerBuild{name: "csi-driver-host-path", kind: hostpath})
	for _, b := range builds {
		b.ops = map[string]timings{}
	}
	maxAttached = cfg.peerCalls + peerBurstClients
	defer func() { maxAttached = attachLimit }()
	for r := range cfg.peerRounds {
		for i, b := range builds {
			launchJar = b.jar
			p := launch(b.kind, fmt.Sprintf("peer-%d-%d", r, i), dir("peer", fmt.Sprintf("pool-%d-%d", r, i)))
			launchJar = ""
			peerCalls(p, fmt.Sprintf("peer-%d-", r), 50, nil) // warm-up, untimed
			peerCalls(p, fmt.Sprintf("peer-%d-timed-", r), cfg.peerCalls, b.ops)
			peerBurst(p, fmt.Sprintf("peer-%d-burst-", r))
			b.threadsBusy, b.rssBusy = append(b.threadsBusy, p.threads()), append(b.rssBusy, p.rss())
			time.Sleep(peerIdle)
			b.threadsIdle, b.rssIdle = append(b.threadsIdle, p.threads()), append(b.rssIdle, p.rss())
			p.stop()
		}
	}
	reference := builds[len(builds)-1]
	fmt.Printf("One client, sequential calls, %d of each per round, %d rounds, every driver fresh in each round and the\n"+
		"drivers alternating; 1 MiB block volumes. CreateVolume and DeleteVolume of new volumes, ControllerPublishVolume\n"+
		"and ControllerUnpublishVolume of each to the driver's node. csi-driver-host-path runs with -enable-attach.\n\n",
		cfg.peerCalls, cfg.peerRounds)
	header := []string{"operation"}
	for _, b := range builds {
		header = append(header, b.name+" p50", "p90")
	}
	for _, b := range builds[:len(builds)-1] {
		header = append(header, b.name+" / host-path (p50)")
	}
	var rows [][]string
	for _, op := range peerOps {
		row := []string{op}
		for _, b := range builds {
			row = append(row, ms(b.ops[op].q(.5)), ms(b.ops[op].q(.9)))
		}
		for _, b := range builds[:len(builds)-1] {
			row = append(row, ratio(float64(b.ops[op].q(.5)), float64(reference.ops[op].q(.5))))
		}
		rows = append(rows, row)
	}
	table(header, rows)

	fmt.Printf("\nAfter each round's calls, a burst of %d concurrent clients for %.0f s (CreateVolume, ControllerPublishVolume,\n"+
		"ControllerUnpublishVolume, DeleteVolume, Probe): the process's threads and RSS right after it, and after %.0f s\n"+
		"without calls (median of the rounds, and the range).\n\n", peerBurstClients, peerBurstTime.Seconds(), peerIdle.Seconds())
	rows = nil
	for _, b := range builds {
		rows = append(rows, []string{b.name, spread(b.threadsBusy, strconv.FormatInt), spread(b.threadsIdle, strconv.FormatInt),
			spread(b.rssBusy, func(v int64, _ int) string { return mib(v) }), spread(b.rssIdle, func(v int64, _ int) string { return mib(v) })})
	}
	table([]string{"process", "threads after the burst", "threads idle", "RSS after the burst", "RSS idle"}, rows)
}

// spread is a median with the range of the values beside it.
func spread(v []int64, format func(int64, int) string) string {
	lo, hi := v[0], v[0]
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	return fmt.Sprintf("%s (%s-%s)", format(quantile(v, .5), 10), format(lo, 10), format(hi, 10))
}

// peerCalls makes n of each of the peer operations, one after the other, and times them when
// ops is given.
func peerCalls(p *proc, prefix string, n int, ops map[string]timings) {
	timed := func(op string, f func()) {
		if ops == nil {
			f()
			return
		}
		t := ops[op]
		t.timed(f)
		ops[op] = t
	}
	for range n {
		timed("Probe", func() {
			ctx, cancel := background()
			defer cancel()
			_, err := p.id.Probe(ctx, &csi.ProbeRequest{})
			must(err)
		})
	}
	ids := make([]string, n)
	for i := range n {
		timed("CreateVolume", func() { ids[i] = p.createVolume(prefix+strconv.Itoa(i), mb, blockCap()) })
	}
	for _, id := range ids {
		timed("ControllerPublishVolume", func() { p.controllerPublish(id) })
	}
	for _, id := range ids {
		timed("ControllerUnpublishVolume", func() { p.controllerUnpublish(id) })
	}
	for _, id := range ids {
		timed("DeleteVolume", func() { p.deleteVolume(id) })
	}
}

const (
	peerBurstClients = 64
	peerBurstTime    = 3 * time.Second
)

// peerBurst has many clients make the peer operations at once, each on volumes of its own.
func peerBurst(p *proc, prefix string) {
	var calls atomic.Int64
	end := time.Now().Add(peerBurstTime)
	parallel(peerBurstClients, peerBurstClients, func(client int) {
		for i := 0; time.Now().Before(end); i++ {
			id := p.createVolume(fmt.Sprintf("%s%d-%d", prefix, client, i), mb, blockCap())
			p.controllerPublish(id)
			p.controllerUnpublish(id)
			p.deleteVolume(id)
			ctx, cancel := background()
			_, err := p.id.Probe(ctx, &csi.ProbeRequest{})
			cancel()
			must(err)
			calls.Add(5)
		}
	})
	if calls.Load() == 0 {
		fatalf("the burst made no call")
	}
}

func (p *proc) controllerPublish(id string) {
	ctx, cancel := background()
	defer cancel()
	if _, err := p.ctl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: id, NodeId: "bench-node",
		VolumeCapability: blockCap()}); err != nil {
		fatalf("ControllerPublishVolume %s: %v", id, err)
	}
}

func (p *proc) controllerUnpublish(id string) {
	ctx, cancel := background()
	defer cancel()
	if _, err := p.ctl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: id, NodeId: "bench-node"}); err != nil {
		fatalf("ControllerUnpublishVolume %s: %v", id, err)
	}
}

// threads is the number of the process's threads, from /proc/PID/task.
func (p *proc) threads() int64 {
	entries, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(p.pid()), "task"))
	must(err)
	return int64(len(entries))
}
