package main

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// timings is a list of latencies of one operation.
type timings []time.Duration

// q is the nearest-rank quantile: the smallest value at or above a fraction q of the samples.
func (t timings) q(q float64) time.Duration {
	if len(t) == 0 {
		return 0
	}
	s := append(timings(nil), t...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(i, 0)]
}

func (t timings) sum() (total time.Duration) {
	for _, d := range t {
		total += d
	}
	return total
}

// timed runs f and appends its duration.
func (t *timings) timed(f func()) {
	start := time.Now()
	f()
	*t = append(*t, time.Since(start))
}

// failures counts the calls of a series that failed, and keeps the first error.
type failures struct {
	n     int
	first error
}

// timedOrRetried times f when it succeeds. A failure is counted, not timed, and f runs once more,
// untimed, so that the series can go on: on a shared machine the driver can trip over what other
// processes do to the host (loop devices coming and going), and one such error should not end
// a benchmark. A second failure in a row ends it.
func (t *timings) timedOrRetried(fails *failures, f func() error) {
	start := time.Now()
	err := f()
	if err == nil {
		*t = append(*t, time.Since(start))
		return
	}
	fails.n++
	if fails.first == nil {
		fails.first = err
	}
	must(f())
}

// report prints the count and the first error, if any failed.
func (fails *failures) report() {
	if fails.n > 0 {
		fmt.Printf("\n%d calls failed and were retried (not timed); the first: %v\n", fails.n, fails.first)
	}
}

func ms(d time.Duration) string {
	switch {
	case d == 0:
		return "—"
	case d < time.Millisecond:
		return fmt.Sprintf("%.3f ms", float64(d)/1e6)
	case d < time.Second:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
}

func mib(kib int64) string { return fmt.Sprintf("%.0f MiB", float64(kib)/1024) }

// ratio is a/b as "×N", or "—" without a b.
func ratio(a, b float64) string {
	if b == 0 || a == 0 {
		return "—"
	}
	r := a / b
	if r >= 10 {
		return fmt.Sprintf("×%.0f", r)
	}
	return fmt.Sprintf("×%.2f", r)
}

// table prints a Markdown table.
func table(header []string, rows [][]string) {
	line := func(cells []string) { fmt.Println("| " + strings.Join(cells, " | ") + " |") }
	line(header)
	sep := make([]string, len(header))
	for i := range sep {
		sep[i] = "---"
	}
	line(sep)
	for _, r := range rows {
		line(r)
	}
}
