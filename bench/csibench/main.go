// Command csibench is blockpool's benchmark client: it starts the real driver binary (and the
// gomock reference process), drives it over its Unix socket with CSI calls, and prints one
// Markdown table per section. bench/run.sh builds it, prepares the pools and cleans up; run
// that, not this.
//
// Every path it mounts, unmounts or removes is under -work (its own temporary directory) or the
// XFS pool run.sh made for it; host paths are only read (/proc).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"blockpool.dev/bench/csibench/results"
)

type config struct {
	work, driver, mock, sanity, xfs, fio string
	starts, burstClients                 int
	burst, idle, settle                  time.Duration
	nodeIters, stageIters, snapshots     int
	flexIters                            int
	listVolumes, listSnapshots           int
	listClients, listStarts              int
	fioRuntime                           time.Duration
	fioSize                              string
	pool                                 string
	oldJar                               string
	pods, podRounds                      int
	metadataIters                        int
	hostpath                             string
	peerRounds, peerCalls                int
	transferMiB, transferRounds          int
	moveGiB                              int
	snapshotSizes                        string
	hostpathRounds, hostpathVolumes      int
	hostpathPublishes                    int
	scopeRounds                          int
	scopeIdle                            time.Duration
	json                                 string
	about                                results.About
}

var cfg config

var sections = map[string]func(){
	"start":      sectionStart,
	"memory":     sectionMemory,
	"node":       sectionNode,
	"snapshot":   sectionSnapshot,
	"list":       sectionList,
	"fio":        sectionFio,
	"flexvolume": sectionFlexvolume,
	"pods":       sectionPods,
	"metadata":   sectionMetadata,
	"metrics":    sectionMetrics,
	"peer":       sectionPeer,
	"transfer":   sectionTransfer,
	"move":       sectionMove,
	"hostpath":   sectionHostpath,
	"scopes":     sectionScopes,
}

var sectionOrder = []string{"start", "memory", "scopes", "node", "hostpath", "snapshot", "metadata", "list", "fio", "flexvolume", "pods", "metrics", "peer", "transfer", "move"}

func main() {
	flag.StringVar(&cfg.work, "work", "", "the bench's own temporary directory on the disk under test (required)")
	flag.StringVar(&cfg.driver, "driver", "", "bin/blockpool-csi (required)")
	flag.StringVar(&cfg.mock, "mock", "", "the gomock reference binary (start and memory)")
	flag.StringVar(&cfg.sanity, "sanity", "", "the csi-sanity binary (memory)")
	flag.StringVar(&cfg.xfs, "xfs", "", "an empty directory on a reflink XFS filesystem the bench mounted (snapshot, metadata)")
	flag.StringVar(&cfg.fio, "fio", "fio", "the fio binary (fio)")
	flag.StringVar(&cfg.pool, "pool", "", "where the pools and the files beside them go, e.g. a shared filesystem's mount (node, fio; default: the work directory)")
	flag.IntVar(&cfg.starts, "starts", 20, "starts measured per process (start)")
	flag.DurationVar(&cfg.burst, "burst", 60*time.Second, "burst duration (memory)")
	flag.DurationVar(&cfg.idle, "idle", 60*time.Second, "idle sampling after the burst (memory)")
	flag.IntVar(&cfg.burstClients, "burst-clients", 64, "concurrent clients of the burst (memory)")
	flag.DurationVar(&cfg.settle, "settle", time.Second, "how long the driver runs after ready before its first node call (node)")
	flag.IntVar(&cfg.nodeIters, "node-iters", 1000, "publish/unpublish and stats iterations (node)")
	flag.IntVar(&cfg.stageIters, "stage-iters", 20, "fresh volumes staged and published (node)")
	flag.IntVar(&cfg.flexIters, "flex-iters", 20, "runs of each FlexVolume call (flexvolume)")
	flag.IntVar(&cfg.snapshots, "snapshots", 50, "snapshots of the 1 GiB volume (snapshot)")
	flag.IntVar(&cfg.metadataIters, "metadata-iters", 50, "calls of each snapshot metadata RPC (metadata)")
	flag.IntVar(&cfg.listVolumes, "list-volumes", 10000, "volumes in the full pool (list, metrics)")
	flag.IntVar(&cfg.listSnapshots, "list-snapshots", 1000, "snapshots in the full pool (list)")
	flag.IntVar(&cfg.listClients, "list-clients", 8, "concurrent clients filling the pool (list, metrics)")
	flag.IntVar(&cfg.listStarts, "list-starts", 3, "starts measured with the full and the empty pool (list)")
	flag.DurationVar(&cfg.fioRuntime, "fio-runtime", 10*time.Second, "runtime of each fio job (fio)")
	flag.StringVar(&cfg.fioSize, "fio-size", "1G", "fio file size (fio)")
	flag.StringVar(&cfg.oldJar, "old-jar", "", "another build's blockpool-csi.jar (its AOT cache beside it), measured in alternating rounds (pods)")
	flag.IntVar(&cfg.pods, "pods", 8, "pods sharing the volume (pods)")
	flag.IntVar(&cfg.podRounds, "pod-rounds", 10, "rounds per build (pods)")
	flag.StringVar(&cfg.hostpath, "hostpath", "", "the csi-driver-host-path binary, built from its repository (peer, hostpath, scopes; see docs/performance-benchmark.md)")
	flag.IntVar(&cfg.peerRounds, "peer-rounds", 3, "rounds, each driver fresh in each (peer)")
	flag.IntVar(&cfg.peerCalls, "peer-calls", 200, "sequential calls of each kind per round (peer)")
	flag.IntVar(&cfg.transferMiB, "transfer-mib", 1024, "MiB of data in the volume restored on the other node (transfer)")
	flag.IntVar(&cfg.transferRounds, "transfer-rounds", 3, "restores, each beside the disk's and the link's copy (transfer)")
	flag.IntVar(&cfg.moveGiB, "move-gib", 10, "GiB of data in the volume moved to the other node (move)")
	flag.StringVar(&cfg.snapshotSizes, "snapshot-sizes", "1,2,4,8,16", "sizes in GiB of the volumes snapshotted -snapshots times each (snapshot)")
	flag.IntVar(&cfg.hostpathRounds, "hostpath-rounds", 3, "rounds, each driver fresh in each (hostpath)")
	flag.IntVar(&cfg.hostpathVolumes, "hostpath-volumes", 20, "fresh volumes staged and unstaged per round and driver (hostpath)")
	flag.IntVar(&cfg.hostpathPublishes, "hostpath-publishes", 10, "publishes, stats and unpublishes of each staged volume (hostpath)")
	flag.IntVar(&cfg.scopeRounds, "scope-rounds", 3, "rounds, every process fresh in each (scopes)")
	flag.DurationVar(&cfg.scopeIdle, "scope-idle", 10*time.Second, "how long a process runs after ready before its RSS is read (scopes)")
	flag.StringVar(&cfg.json, "json", "", "also write the measurements the figures draw to this file, as JSON (bench/figures.sh)")
	flag.StringVar(&cfg.about.Note, "note", "", "how the machine was shared during the run, for the record (e.g. other builds on its cores)")
	// What bench/run.sh prints above the tables, recorded with the measurements.
	flag.StringVar(&cfg.about.Date, "run-date", "", "the run's date (set by bench/run.sh)")
	flag.StringVar(&cfg.about.Commit, "run-commit", "", "the driver's commit (set by bench/run.sh)")
	flag.StringVar(&cfg.about.Machine, "run-machine", "", "the machine and the pools' filesystem (set by bench/run.sh)")
	flag.StringVar(&cfg.about.Command, "run-command", "", "the command that reproduces the run (set by bench/run.sh)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: csibench -work DIR -driver PATH [flags] [%s]...\n", strings.Join(sectionOrder, "|"))
		flag.PrintDefaults()
	}
	flag.Parse()
	if cfg.work == "" || cfg.driver == "" {
		flag.Usage()
		os.Exit(2)
	}
	chosen := flag.Args()
	if len(chosen) == 0 {
		chosen = sectionOrder
	}
	for _, s := range chosen {
		if sections[s] == nil {
			fatalf("unknown section %q (known: %s)", s, strings.Join(sectionOrder, " "))
		}
	}
	if missing := needReference(chosen, cfg.hostpath); len(missing) > 0 {
		// said before any section runs, not minutes into the run
		fatalf("the sections %s run csi-driver-host-path beside blockpool: give its binary with -hostpath "+
			"(docs/performance-benchmark.md says how to build it), or name the sections to run",
			strings.Join(missing, ", "))
	}
	// Ctrl-C or run.sh's TERM: stop the drivers we started; run.sh's trap removes the mounts,
	// loop devices and directories under the work directory.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-signals
		stopping.Store(true)
		stopAll()
		fmt.Fprintf(os.Stderr, "csibench: %v, stopped\n", s)
		os.Exit(130)
	}()
	if cfg.about.Note != "" {
		fmt.Printf("note: %s\n", cfg.about.Note)
	}
	recorded.About = cfg.about
	recorded.About.LoadBefore = loadAverage()
	for _, s := range chosen {
		start := time.Now()
		fmt.Printf("\n## %s\n\n", s)
		sections[s]()
		fmt.Printf("\n(%s: %.0f s)\n", s, time.Since(start).Seconds())
	}
	stopAll()
	recorded.About.LoadAfter = loadAverage()
	fmt.Printf("\nload average (1 min): %.2f when the sections began, %.2f when they ended\n",
		recorded.About.LoadBefore, recorded.About.LoadAfter)
	if cfg.json != "" {
		must(results.Write(cfg.json, recorded))
	}
}

// referenceSections run csi-driver-host-path, which -hostpath names, beside blockpool.
var referenceSections = []string{"hostpath", "peer"}

// needReference lists the chosen sections that need csi-driver-host-path when no binary is given.
func needReference(chosen []string, hostpath string) []string {
	var missing []string
	if hostpath != "" {
		return missing
	}
	for _, s := range chosen {
		if slices.Contains(referenceSections, s) {
			missing = append(missing, s)
		}
	}
	return missing
}

// loadAverage is the host's 1-minute load average, from /proc/loadavg.
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	must(err)
	load, err := strconv.ParseFloat(strings.Fields(string(data))[0], 64)
	must(err)
	return load
}

// recorded is what the sections with a figure measured, for -json.
var recorded results.Run

// dir makes (and returns) a directory under the work directory.
func dir(parts ...string) string {
	return dirIn(cfg.work, parts...)
}

// poolDir makes (and returns) a directory on the pool's filesystem: under -pool when given.
func poolDir(parts ...string) string {
	if cfg.pool == "" {
		return dir(parts...)
	}
	return dirIn(cfg.pool, parts...)
}

func dirIn(root string, parts ...string) string {
	p := filepath.Join(append([]string{root}, parts...)...)
	must(os.MkdirAll(p, 0o755))
	return p
}

func must(err error) {
	if err != nil {
		fatalf("%v", err)
	}
}

// stopping is set once a signal arrived: calls then fail because their connections close, and
// are no failures to report.
var stopping atomic.Bool

func fatalf(format string, args ...any) {
	if stopping.Load() {
		select {} // the signal handler exits
	}
	fmt.Fprintf(os.Stderr, "csibench: "+format+"\n", args...)
	stopAll()
	os.Exit(1)
}

func background() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 2*time.Minute)
}
