package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// startTimes starts a process n times on the same pool and returns its start -> ready times.
func startTimes(k kind, pool string, n int) timings {
	var t timings
	for range n {
		p := launch(k, "start-"+string(k), pool)
		t = append(t, p.ready)
		p.stop()
	}
	return t
}

// sectionStart: process start -> first ready Probe, for blockpool and the reference.
func sectionStart() {
	pool := dir("start", "pool")
	bp, mock := startTimes(blockpool, pool, cfg.starts), startTimes(gomock, "", cfg.starts)
	fmt.Printf("Process start to the first Probe answering ready, %d starts each, empty pool.\n\n", cfg.starts)
	table([]string{"process", "p50", "p90", "max", "blockpool / gomock (p50)"}, [][]string{
		{"blockpool", ms(bp.q(.5)), ms(bp.q(.9)), ms(bp.q(1)), ratio(float64(bp.q(.5)), float64(mock.q(.5)))},
		{"gomock", ms(mock.q(.5)), ms(mock.q(.9)), ms(mock.q(1)), ""},
	})
}

// idleRSS starts a process, waits 3 s after ready and reads its resident memory.
func idleRSS(k kind, tag, pool string) (*proc, int64) {
	p := launch(k, tag, pool)
	time.Sleep(3 * time.Second)
	return p, p.rss()
}

// sectionMemory: idle RSS; peak RSS and CPU time over two csi-sanity runs; RSS and CPU of a
// burst of cheap calls, and how fast memory comes back once it is over.
func sectionMemory() {
	bp, bpIdle := idleRSS(blockpool, "memory-blockpool", dir("memory", "pool"))
	mock, mockIdle := idleRSS(gomock, "memory-gomock", "")
	mock.stop()
	cpu0, children0 := bp.cpu()
	start := time.Now()
	var summaries []string
	for _, access := range []string{"mount", "block"} {
		summaries = append(summaries, access+": "+runSanity(bp, access))
	}
	wall := time.Since(start)
	cpu1, children1 := bp.cpu()
	peak := bp.hwm()
	bp.stop()
	fmt.Printf("blockpool: idle RSS 3 s after ready; peak RSS (VmHWM) and CPU time over csi-sanity for mount then block volumes\n(%.0f s wall; %s).\n", wall.Seconds(), strings.Join(summaries, ", "))
	fmt.Printf("gomock: idle RSS only (it is no storage driver and cannot pass csi-sanity).\n\n")
	table([]string{"process", "idle RSS", "peak RSS over csi-sanity", "CPU time (driver)", "CPU time (its mkfs, mount, ...)"}, [][]string{
		{"blockpool", mib(bpIdle), mib(peak), fmt.Sprintf("%.1f s", (cpu1 - cpu0).Seconds()), fmt.Sprintf("%.1f s", (children1 - children0).Seconds())},
		{"gomock", mib(mockIdle), "", "", ""},
		{"blockpool / gomock", ratio(float64(bpIdle), float64(mockIdle)), "", "", ""},
	})

	fmt.Printf("\nBurst: %d concurrent clients for %.0f s of Probe, GetPluginInfo, ControllerGetCapabilities, NodeGetCapabilities,\n"+
		"ListVolumes, NodeGetVolumeStats (a published ext4 volume), CreateVolume+DeleteVolume (1 MiB block); then RSS\n"+
		"every second for up to %.0f s of idle. Fresh processes; the client shares the machine's cores with them.\n\n", cfg.burstClients, cfg.burst.Seconds(), cfg.idle.Seconds())
	b, m := burst(blockpool), burst(gomock)
	row := func(name string, r burstResult) []string {
		return []string{name, strconv.FormatInt(r.calls, 10), fmt.Sprintf("%.0f", float64(r.calls)/cfg.burst.Seconds()),
			strconv.FormatInt(r.errors, 10), mib(r.rssEnd), fmt.Sprintf("%.1f s", r.cpu.Seconds()), ms(r.cpuPerThousand()), r.backUnder, mib(r.rssLast)}
	}
	table([]string{"process", "calls", "calls/s", "errors", "RSS at end of burst", "CPU time in burst", "CPU per 1000 calls", "back under 96 MiB", "RSS at last sample"}, [][]string{
		row("blockpool", b), row("gomock", m),
		{"blockpool / gomock", "", ratio(float64(b.calls), float64(m.calls)), "", ratio(float64(b.rssEnd), float64(m.rssEnd)),
			ratio(b.cpu.Seconds(), m.cpu.Seconds()), ratio(float64(b.cpuPerThousand()), float64(m.cpuPerThousand())), "",
			ratio(float64(b.rssLast), float64(m.rssLast))},
	})
	if b.firstError != "" {
		fmt.Printf("\nblockpool's first error in the burst: %s\n", b.firstError)
	}
}

// runSanity runs csi-sanity against a running driver, with the flags of sanity-tests/run-sanity.sh,
// and returns its count of specs passed and failed.
func runSanity(p *proc, access string) string {
	if cfg.sanity == "" {
		fatalf("-sanity is required")
	}
	base := dir("memory", "sanity-"+access)
	log := filepath.Join(cfg.work, "sanity-"+access+".log")
	out, err := os.Create(log)
	must(err)
	defer out.Close()
	cmd := exec.Command(cfg.sanity, "-csi.endpoint", "unix://"+p.sock,
		"-csi.stagingdir", filepath.Join(base, "staging"), "-csi.mountdir", filepath.Join(base, "target"),
		"-csi.testvolumeaccesstype", access, "-csi.testnodevolumeattachlimit",
		"-csi.testvolumesize", strconv.FormatInt(gib, 10), "-csi.testvolumeexpandsize", strconv.FormatInt(2*gib, 10),
		"-ginkgo.no-color")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		fatalf("csi-sanity (%s) failed: %v\n%s", access, err, tail(log, 40))
	}
	data, err := os.ReadFile(log)
	must(err)
	counts := regexp.MustCompile(`(\d+) Passed \| (\d+) Failed`).FindAllStringSubmatch(string(data), -1)
	if len(counts) == 0 {
		fatalf("no spec counts in csi-sanity's output:\n%s", tail(log, 20))
	}
	last := counts[len(counts)-1]
	return fmt.Sprintf("%s specs passed, %s failed", last[1], last[2])
}

type burstResult struct {
	calls, errors   int64
	firstError      string
	rssEnd, rssLast int64
	cpu             time.Duration
	backUnder       string
}

func (r burstResult) cpuPerThousand() time.Duration {
	return time.Duration(float64(r.cpu) * 1000 / float64(max(r.calls, 1)))
}

const idleThresholdKiB = 96 * 1024

func burst(k kind) burstResult {
	base := dir("burst-" + string(k))
	p := launch(k, "burst-"+string(k), dir("burst-"+string(k), "pool"))
	defer p.stop()
	vol := p.attach("burst-stats", 64*mb, ext4Cap())
	vol.stage(dir("burst-"+string(k), "staging"))
	target := filepath.Join(base, "target")
	vol.publish(target)

	var r burstResult
	var errOnce sync.Once
	cpu0, _ := p.cpu()
	deadline := time.Now().Add(cfg.burst)
	var wg sync.WaitGroup
	for c := range cfg.burstClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each client has its own connection, as each sidecar and kubelet has.
			conn, err := grpc.NewClient("unix://"+p.sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
			must(err)
			defer conn.Close()
			id, ctl, node := csi.NewIdentityClient(conn), csi.NewControllerClient(conn), csi.NewNodeClient(conn)
			calls := []func(ctx context.Context, i int) error{
				func(ctx context.Context, _ int) error { _, err := id.Probe(ctx, &csi.ProbeRequest{}); return err },
				func(ctx context.Context, _ int) error {
					_, err := node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
					return err
				},
				func(ctx context.Context, _ int) error {
					_, err := ctl.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{})
					return err
				},
				func(ctx context.Context, _ int) error {
					_, err := id.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
					return err
				},
				func(ctx context.Context, _ int) error {
					_, err := ctl.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: 100})
					return err
				},
				func(ctx context.Context, _ int) error {
					_, err := node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: vol.id, VolumePath: target})
					return err
				},
				func(ctx context.Context, i int) error {
					resp, err := ctl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: fmt.Sprintf("burst-%d-%d", c, i),
						CapacityRange:      &csi.CapacityRange{RequiredBytes: mb},
						VolumeCapabilities: []*csi.VolumeCapability{blockCap()}})
					if err != nil {
						return err
					}
					atomic.AddInt64(&r.calls, 1)
					_, err = ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: resp.Volume.VolumeId})
					return err
				},
			}
			for i := 0; time.Now().Before(deadline); i++ {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				err := calls[(i+c)%len(calls)](ctx, i)
				cancel()
				atomic.AddInt64(&r.calls, 1)
				if err != nil {
					atomic.AddInt64(&r.errors, 1)
					errOnce.Do(func() { r.firstError = err.Error() })
				}
			}
		}()
	}
	wg.Wait()
	cpu1, _ := p.cpu()
	r.cpu = cpu1 - cpu0
	r.rssEnd = p.rss()
	r.backUnder = fmt.Sprintf("not within %.0f s", cfg.idle.Seconds())
	r.rssLast = r.rssEnd
	for s := 0; r.rssLast >= idleThresholdKiB && time.Duration(s)*time.Second < cfg.idle; s++ {
		time.Sleep(time.Second)
		r.rssLast = p.rss()
		if r.rssLast < idleThresholdKiB {
			r.backUnder = fmt.Sprintf("after %d s", s+1)
		}
	}
	if r.rssEnd < idleThresholdKiB {
		r.backUnder = "never above"
	}
	vol.unpublish(target)
	vol.detach()
	return r
}
