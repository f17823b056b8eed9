package main

import (
	"fmt"
	"time"

	"blockpool.dev/bench/csibench/results"
)

// scopeProcess is one process a pool scope runs, started as its deployment starts it.
type scopeProcess struct {
	name, detail string
	kind         kind
	scope, mode  string // blockpool's --pool-scope and --mode
	rssKiB       []int64
}

// sectionScopes: the idle memory of every process each pool scope runs: on a node-local pool one
// process per node serves both services; on a shared pool each node runs a node plugin and the
// cluster one controller. Beside them, when given, csi-driver-host-path and the gomock reference.
// Every process fresh in each round on an empty pool of its own, one at a time, the processes
// alternating.
func sectionScopes() {
	processes := []*scopeProcess{
		{name: "node-local pool, per node", detail: "--pool-scope node --mode all", kind: blockpool, scope: "node", mode: "all"},
		{name: "shared pool, per node", detail: "--pool-scope shared --mode node", kind: blockpool, scope: "shared", mode: "node"},
		{name: "shared pool, per cluster", detail: "--pool-scope shared --mode controller", kind: blockpool, scope: "shared", mode: "controller"},
	}
	if cfg.hostpath != "" {
		processes = append(processes, &scopeProcess{name: "csi-driver-host-path", detail: "-enable-attach", kind: hostpath})
	}
	if cfg.mock != "" {
		processes = append(processes, &scopeProcess{name: "gomock", detail: "no storage: the Go process's floor", kind: gomock})
	}
	for r := range cfg.scopeRounds {
		for i, sp := range processes {
			tag := fmt.Sprintf("scopes-%d-%d", r, i)
			launchScope, launchArgs = sp.scope, []string{"--mode", sp.mode}
			p := launch(sp.kind, tag, dir("scopes", tag, "pool"))
			launchScope, launchArgs = "shared", nil
			time.Sleep(cfg.scopeIdle)
			sp.rssKiB = append(sp.rssKiB, p.rss())
			p.stop()
		}
	}

	fmt.Printf("Idle RSS %v after ready (no call but the ready Probe), each process fresh in each of %d rounds on an\n"+
		"empty pool of its own, one at a time, the processes alternating: median of the rounds and the range.\n\n",
		cfg.scopeIdle, cfg.scopeRounds)
	var rows [][]string
	for _, sp := range processes {
		rows = append(rows, []string{sp.name, sp.detail, spread(sp.rssKiB, func(v int64, _ int) string { return mibTenths(v) })})
		rss := make([]float64, len(sp.rssKiB))
		for i, v := range sp.rssKiB {
			rss[i] = float64(v) / 1024
		}
		recorded.IdleMemory = append(recorded.IdleMemory, results.IdleMemory{Process: sp.name, Detail: sp.detail, MiB: rss})
	}
	table([]string{"process", "started with", "idle RSS"}, rows)
	// A shared pool's nodes each pay for their plugin; its controller is paid for once per cluster.
	nodeLocal, sharedNode := quantile(processes[0].rssKiB, .5), quantile(processes[1].rssKiB, .5)
	fmt.Printf("\nPer node, a shared pool's plugin / a node-local pool's (medians): %s.\n", ratio(float64(sharedNode), float64(nodeLocal)))
}
