// Package results is what a bench run records for its figures: the run's description and the
// measurements of the sections that have a figure. csibench -json writes it; the figures command
// (bench/csibench/figures) draws from it, so that no figure is read back from a printed table.
package results

import (
	"encoding/json"
	"fmt"
	"os"
)

// Run is one run of bench/run.sh. A section left out of the run leaves its list empty.
type Run struct {
	About About `json:"about"`
	// NodeCalls: the hostpath section, every node call of blockpool and of csi-driver-host-path.
	NodeCalls []Latency `json:"nodeCalls,omitempty"`
	// Snapshots: the snapshot section's CreateSnapshot at each volume size.
	Snapshots []SnapshotAtSize `json:"snapshots,omitempty"`
	// Fio: the fio section, each job in the volume, on the pool's filesystem and on a bare loop device.
	Fio []FioJob `json:"fio,omitempty"`
	// IdleMemory: the scopes section, each process's idle RSS in every round.
	IdleMemory []IdleMemory `json:"idleMemory,omitempty"`
}

// About says where and how the run was made, as bench/run.sh prints it above its tables.
type About struct {
	Date    string `json:"date"`    // UTC, to the minute
	Commit  string `json:"commit"`  // the driver's, "+changes" when the work tree differed
	Machine string `json:"machine"` // CPU, cores, memory, kernel, the pools' filesystem
	Command string `json:"command"` // the command that reproduces the run
	Note    string `json:"note,omitempty"`
	// The host's 1-minute load average when the sections began and when they ended: how busy the
	// machine was around the run, the bench's own processes included.
	LoadBefore float64 `json:"loadBefore"`
	LoadAfter  float64 `json:"loadAfter"`
}

// Latency is one operation of one process: its sample count and quantiles in milliseconds.
type Latency struct {
	Process   string  `json:"process"`
	Operation string  `json:"operation"`
	N         int     `json:"n"`
	P50       float64 `json:"p50Ms"`
	P90       float64 `json:"p90Ms"`
	P99       float64 `json:"p99Ms"`
}

// SnapshotAtSize is CreateSnapshot of a volume of one size, beside the kernel's FICLONE of its image.
type SnapshotAtSize struct {
	SizeGiB    int     `json:"sizeGiB"`
	DataMiB    int     `json:"dataMiB"`
	N          int     `json:"n"`
	P50        float64 `json:"p50Ms"`
	P90        float64 `json:"p90Ms"`
	FicloneP50 float64 `json:"ficloneP50Ms"`
}

// FioJob is one fio job's throughput in each place it ran.
type FioJob struct {
	Job      string     `json:"job"`
	Random   bool       `json:"random"` // 4 KiB random I/O, compared by IOPS; sequential by MiB/s
	Volume   Throughput `json:"volume"`
	PoolFS   Throughput `json:"poolFs"`
	BareLoop Throughput `json:"bareLoop"`
}

// Throughput is what fio reported of a job.
type Throughput struct {
	IOPS  float64 `json:"iops"`
	MiBps float64 `json:"mibPerSecond"`
}

// IdleMemory is one process's resident memory when idle, once per round.
type IdleMemory struct {
	Process string    `json:"process"`
	Detail  string    `json:"detail"` // how it was started
	MiB     []float64 `json:"rssMiB"`
}

// Write writes the run as indented JSON.
func Write(path string, run Run) error {
	data, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// Read reads a run that Write wrote.
func Read(path string) (Run, error) {
	var run Run
	data, err := os.ReadFile(path)
	if err != nil {
		return run, err
	}
	if err := json.Unmarshal(data, &run); err != nil {
		return run, fmt.Errorf("%s: %w", path, err)
	}
	return run, nil
}
