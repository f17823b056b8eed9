package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// launchArgs, when set, are flags the next launched blockpool gets besides the bench's own.
var launchArgs []string

// withMetrics launches blockpool serving its metrics on a free loopback port; it returns the URL.
func withMetrics(tag, pool string) (*proc, string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	addr := l.Addr().String()
	must(l.Close())
	launchArgs = []string{"--http-endpoint", addr}
	defer func() { launchArgs = nil }()
	return launch(blockpool, tag, pool), "http://" + addr + "/metrics"
}

// scrape GETs the metrics and returns the value of each sample line without labels, by name.
func scrape(url string) map[string]float64 {
	resp, err := http.Get(url)
	must(err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fatalf("GET %s: %s", url, resp.Status)
	}
	values := map[string]float64{}
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		name, value, ok := strings.Cut(lines.Text(), " ")
		if ok && !strings.HasPrefix(name, "#") && !strings.Contains(name, "{") {
			if v, err := strconv.ParseFloat(strings.Fields(value)[0], 64); err == nil {
				values[name] = v
			}
		}
	}
	must(lines.Err())
	return values
}

// callLatencies times n sequential NodeGetCapabilities (answered in place: the cheapest call, so
// the one where an interceptor's cost shows most) and 100 CreateVolume+DeleteVolume of 1 MiB block
// volumes, after as many calls again to warm the driver up.
func callLatencies(p *proc, n int, prefix string) (cheap, create timings) {
	call := func() {
		ctx, cancel := background()
		defer cancel()
		_, err := p.node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
		must(err)
	}
	for range n {
		call()
	}
	for i := range 100 {
		p.deleteVolume(p.createVolume(prefix+"warm-"+strconv.Itoa(i), mb, blockCap()))
	}
	for range n {
		cheap.timed(call)
	}
	for i := range 100 {
		var id string
		create.timed(func() { id = p.createVolume(prefix+strconv.Itoa(i), mb, blockCap()) })
		p.deleteVolume(id)
	}
	return cheap, create
}

// sectionMetrics: what the Prometheus endpoint costs. Idle RSS of fresh drivers with and without
// --http-endpoint, alternating; call latencies of both, in alternating rounds; the round trip of a
// scrape against one to the same server that writes no metrics (/-/healthy), alternating, on an
// empty pool and on one of -list-volumes volumes; and the census behind the pool's gauges, with
// and without a FIEMAP per image.
func sectionMetrics() {
	const rounds, calls, rssRounds, emptyTrips, fullTrips = 3, 2000, 9, 200, 500
	var rssOff, rssOn, rssScraped, rssAdded []int64
	for r := range rssRounds {
		off, offIdle := idleRSS(blockpool, "metrics-rss-off", dir("metrics", fmt.Sprintf("rss-off-%d", r)))
		off.stop()
		on, url := withMetrics("metrics-rss-on", dir("metrics", fmt.Sprintf("rss-on-%d", r)))
		time.Sleep(3 * time.Second)
		onIdle := on.rss()
		for range 100 {
			get(url)
		}
		time.Sleep(3 * time.Second)
		rssScraped = append(rssScraped, on.rss())
		on.stop()
		rssOff, rssOn, rssAdded = append(rssOff, offIdle), append(rssOn, onIdle), append(rssAdded, onIdle-offIdle)
	}

	var cheapOff, cheapOn, createOff, createOn timings
	var emptyScrapes, emptyBaseline timings
	for r := range rounds {
		off := launch(blockpool, "metrics-off", dir("metrics", "pool-off"))
		c, v := callLatencies(off, calls, fmt.Sprintf("off-%d-", r))
		cheapOff, createOff = append(cheapOff, c...), append(createOff, v...)
		off.stop()

		on, url := withMetrics("metrics-on", dir("metrics", "pool-on"))
		c, v = callLatencies(on, calls, fmt.Sprintf("on-%d-", r))
		cheapOn, createOn = append(cheapOn, c...), append(createOn, v...)
		s, b := roundTrips(url, emptyTrips)
		emptyScrapes, emptyBaseline = append(emptyScrapes, s...), append(emptyBaseline, b...)
		on.stop()
	}

	// The full pool: filled through a driver without metrics, then one with them starts on it.
	pool := dir("metrics", "pool-full")
	filler := launch(blockpool, "metrics-fill", pool)
	fill := parallel(cfg.listVolumes, cfg.listClients, func(i int) {
		filler.createVolume("metrics-"+strconv.Itoa(i), mb, blockCap())
	})
	filler.stop()
	settle()
	p, url := withMetrics("metrics-full", pool)
	waitForCensus(url)
	fullBytes := get(url)
	scrapes, baseline := roundTrips(url, fullTrips)
	p.stop()

	// The census with and without a FIEMAP per image: the images empty (only the first is mapped),
	// then each holding one block, alternating, a fresh driver each time.
	var censusEmpty, censusHeld timings
	for range censusRounds {
		fillImages(pool, false)
		censusEmpty = append(censusEmpty, censusAtStart(pool))
		fillImages(pool, true)
		censusHeld = append(censusHeld, censusAtStart(pool))
	}

	fmt.Printf("Idle RSS: %d rounds, each a fresh driver without and one with --http-endpoint, no call but the ready Probe,\n"+
		"read 3 s after ready; scraped: the one with it again after 100 scrapes and 3 s. Calls: %d rounds of %d sequential\n"+
		"NodeGetCapabilities and 100 CreateVolume (1 MiB block) per driver, after as many to warm it up.\n\n",
		rssRounds, rounds, calls)
	spread := func(v []int64) []string {
		return []string{mibTenths(quantile(v, .5)), mibTenths(quantile(v, 0)), mibTenths(quantile(v, 1))}
	}
	table([]string{"RSS", "median", "min", "max"}, [][]string{
		append([]string{"without --http-endpoint"}, spread(rssOff)...),
		append([]string{"with it"}, spread(rssOn)...),
		append([]string{"with it − without, each round"}, spread(rssAdded)...),
		append([]string{"with it, after 100 scrapes"}, spread(rssScraped)...),
	})
	fmt.Println()
	table([]string{"call", "without", "with", "with / without"}, [][]string{
		{"NodeGetCapabilities p50", ms(cheapOff.q(.5)), ms(cheapOn.q(.5)), ratio(float64(cheapOn.q(.5)), float64(cheapOff.q(.5)))},
		{"NodeGetCapabilities p90", ms(cheapOff.q(.9)), ms(cheapOn.q(.9)), ratio(float64(cheapOn.q(.9)), float64(cheapOff.q(.9)))},
		{"CreateVolume p50", ms(createOff.q(.5)), ms(createOn.q(.5)), ratio(float64(createOn.q(.5)), float64(createOff.q(.5)))},
	})
	fmt.Printf("\nRound trips: GET /metrics and GET /-/healthy (the exporter's own handler on the same server,\n"+
		"writing no metrics) alternating on one keep-alive connection, after as many untimed: %d of each on the empty pools,\n"+
		"%d with %d volumes (filled in %.0f s; a scrape of %d bytes, gzipped on the wire). The scrape's own cost is the difference.\n\n",
		len(emptyScrapes), fullTrips, cfg.listVolumes, fill.Seconds(), fullBytes)
	trips := func(what string, t timings) []string {
		return []string{what, ms(t.q(.5)), ms(t.q(.9)), ms(t.q(.99))}
	}
	difference := func(what string, a, b timings) []string {
		return []string{what, ms(a.q(.5) - b.q(.5)), ms(a.q(.9) - b.q(.9)), ms(a.q(.99) - b.q(.99))}
	}
	table([]string{"round trip", "p50", "p90", "p99"}, [][]string{
		trips("GET /-/healthy, empty pool", emptyBaseline),
		trips("GET /metrics, empty pool", emptyScrapes),
		difference("the scrape's own cost, empty pool", emptyScrapes, emptyBaseline),
		trips(fmt.Sprintf("GET /-/healthy, %d volumes", cfg.listVolumes), baseline),
		trips(fmt.Sprintf("GET /metrics, %d volumes", cfg.listVolumes), scrapes),
		difference(fmt.Sprintf("the scrape's own cost, %d volumes", cfg.listVolumes), scrapes, baseline),
	})
	fmt.Println()
	table([]string{fmt.Sprintf("the pool's census of %d volumes, at a driver's start", cfg.listVolumes), "p50", "min", "max"}, [][]string{
		{fmt.Sprintf("images empty: one FIEMAP in all (%d starts)", len(censusEmpty)), ms(censusEmpty.q(.5)), ms(censusEmpty.q(0)), ms(censusEmpty.q(1))},
		{fmt.Sprintf("images holding a block: a FIEMAP each (%d starts)", len(censusHeld)), ms(censusHeld.q(.5)), ms(censusHeld.q(0)), ms(censusHeld.q(1))},
		{"held / empty", ratio(float64(censusHeld.q(.5)), float64(censusEmpty.q(.5))), "", ""},
	})
}

// roundTrips times n GETs of the metrics URL and n of the exporter's /-/healthy on the same
// server, alternating which goes first, so that both see the same moments of the machine; after
// as many of each untimed, so that both run compiled as a driver scraped for an hour does (C1
// compiles a method at its 200th call). Like Prometheus, Go's client asks for gzip.
func roundTrips(metricsURL string, n int) (scrapes, baseline timings) {
	healthy := strings.TrimSuffix(metricsURL, "/metrics") + "/-/healthy"
	for range n {
		get(metricsURL)
		get(healthy)
	}
	for i := range n {
		if i%2 == 0 {
			baseline.timed(func() { get(healthy) })
		}
		scrapes.timed(func() { get(metricsURL) })
		if i%2 == 1 {
			baseline.timed(func() { get(healthy) })
		}
	}
	return scrapes, baseline
}

// get GETs a URL, reads the whole answer and returns its length: what a scraper's round trip costs.
func get(url string) int64 {
	resp, err := http.Get(url)
	must(err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fatalf("GET %s: %s", url, resp.Status)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	must(err)
	return n
}

// quantile is the nearest-rank quantile of sizes, as timings.q.
func quantile(v []int64, q float64) int64 {
	s := append([]int64(nil), v...)
	slices.Sort(s)
	return s[max(int(math.Ceil(q*float64(len(s))))-1, 0)]
}

// mibTenths formats KiB as MiB with one decimal: RSS differences are a few MiB.
func mibTenths(v int64) string { return fmt.Sprintf("%.1f MiB", float64(v)/1024) }

// censusRounds: starts of a driver on the full pool per kind of image, alternating.
const censusRounds = 3

// waitForCensus scrapes until the pool's gauges count every volume of the full pool; the last scrape.
func waitForCensus(url string) map[string]float64 {
	for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		census := scrape(url)
		if census["blockpool_pool_volumes"] == float64(cfg.listVolumes) {
			return census
		}
		if time.Since(start) > 2*time.Minute {
			fatalf("the metrics never showed %d volumes: %v", cfg.listVolumes, census["blockpool_pool_volumes"])
		}
	}
}

// censusAtStart starts a driver with metrics on the pool and returns how long its first census took.
func censusAtStart(pool string) time.Duration {
	p, url := withMetrics("metrics-census", pool)
	defer p.stop()
	census := waitForCensus(url)
	return time.Duration(census["blockpool_pool_census_duration_seconds"] * float64(time.Second))
}

// fillImages writes one 4 KiB block at the start of every volume image of the pool (held), or
// punches it out again, then flushes and lets the machine settle.
func fillImages(pool string, held bool) {
	images, err := filepath.Glob(filepath.Join(pool, "volumes", "*.img"))
	must(err)
	block := make([]byte, 4096)
	for i := range block {
		block[i] = 0x5a
	}
	for _, image := range images {
		f, err := os.OpenFile(image, os.O_WRONLY, 0)
		must(err)
		if held {
			_, err = f.WriteAt(block, 0)
		} else {
			err = syscall.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, int64(len(block)))
		}
		must(err)
		must(f.Close())
	}
	settle()
}
