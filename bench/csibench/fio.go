package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"blockpool.dev/bench/csibench/results"
)

type fioJob struct {
	name, rw, bs string
	iodepth      int
}

// The same jobs in a published volume and on a file beside the pool; direct I/O, libaio,
// fsync at the end of each write job. The write jobs come first and lay the file out.
var fioJobs = []fioJob{
	{"seq write 1 MiB", "write", "1M", 1},
	{"seq read 1 MiB", "read", "1M", 1},
	{"rand write 4k qd16", "randwrite", "4k", 16},
	{"rand read 4k qd16", "randread", "4k", 16},
}

type fioResult struct{ iops, mibps float64 }

func (r fioResult) throughput() results.Throughput {
	return results.Throughput{IOPS: r.iops, MiBps: r.mibps}
}

func runFio(job fioJob, file string, extra ...string) fioResult {
	out := filepath.Join(cfg.work, "fio.json")
	cmd := exec.Command(cfg.fio, "--name=bench", "--filename="+file, "--size="+cfg.fioSize, "--rw="+job.rw,
		"--bs="+job.bs, "--ioengine=libaio", "--iodepth="+strconv.Itoa(job.iodepth), "--direct=1",
		"--end_fsync=1", "--time_based", fmt.Sprintf("--runtime=%.0f", cfg.fioRuntime.Seconds()),
		"--output-format=json", "--output="+out)
	cmd.Args = append(cmd.Args, extra...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		fatalf("fio %s on %s: %v\n%s", job.name, file, err, msg)
	}
	data, err := os.ReadFile(out)
	must(err)
	var parsed struct {
		Jobs []struct {
			Read, Write struct {
				IOPS float64 `json:"iops"`
				BW   float64 `json:"bw"` // KiB/s
			}
		}
	}
	must(json.Unmarshal(data, &parsed))
	side := parsed.Jobs[0].Read
	if strings.Contains(job.rw, "write") {
		side = parsed.Jobs[0].Write
	}
	return fioResult{side.IOPS, side.BW / 1024}
}

// cachedKiB is the host page cache (Cached: in /proc/meminfo).
func cachedKiB() int64 { return kibField("/proc/meminfo", "Cached") }

// dropCaches writes back dirty pages and drops the host's clean page cache (a global, harmless
// action: other processes only reread what they need).
func dropCaches() {
	syscall.Sync()
	must(os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0o200))
}

// bareLoop is what the kernel alone gives a volume: an image file on the pool's filesystem
// attached by losetup(8) with direct I/O, formatted ext4 and mounted, without the driver; the
// returned function unmounts and detaches it (bench/run.sh does too, after a failure).
func bareLoop(size int64) (string, func()) {
	image := filepath.Join(poolDir("fio", "bare"), "bare.img")
	f, err := os.Create(image)
	must(err)
	must(f.Truncate(size))
	must(f.Close())
	out, err := exec.Command("losetup", "--direct-io=on", "--find", "--show", image).Output()
	must(err)
	device := strings.TrimSpace(string(out))
	detach := func() { _ = exec.Command("losetup", "--detach", device).Run() }
	if msg, err := exec.Command("mkfs.ext4", "-q", device).CombinedOutput(); err != nil {
		detach()
		fatalf("mkfs.ext4 %s: %v\n%s", device, err, msg)
	}
	mnt := dir("fio", "bare-mnt")
	if err := unix.Mount(device, mnt, "ext4", 0, ""); err != nil {
		detach()
		fatalf("mount %s: %v", device, err)
	}
	return filepath.Join(mnt, "fio.dat"), func() {
		must(unix.Unmount(mnt, 0))
		detach()
	}
}

// sectionFio: fio in a published ext4 volume vs the same job on a file in the pool's filesystem,
// and on a loop device the driver did not make (what the kernel's loop driver costs by itself).
func sectionFio() {
	pool := poolDir("fio", "pool")
	p := launch(blockpool, "fio", pool)
	defer p.stop()
	vol := p.attach("fio", 2*gib, ext4Cap())
	vol.stage(dir("fio", "staging"))
	target := filepath.Join(dir("fio", "targets"), "t")
	vol.publish(target)
	inVolume, besidePool := filepath.Join(target, "fio.dat"), filepath.Join(poolDir("fio", "direct"), "fio.dat")

	// What the host caches of each file: the volume's image, and the file fio wrote beside the pool.
	image := filepath.Join(pool, "volumes", vol.id+".img")
	cachedFile := []string{image, besidePool}
	warm := filepath.Join(poolDir("fio", "direct"), "warm.dat")

	onBareLoop, removeBareLoop := bareLoop(2 * gib)
	defer removeBareLoop()

	var rows, cacheRows [][]string
	for _, job := range fioJobs {
		var measured [3]fioResult
		for i, file := range []string{inVolume, besidePool, onBareLoop} {
			write := strings.Contains(job.rw, "write")
			var before int64
			if write {
				dropCaches()
				// fio's own libraries, read back after the drop, are no part of what the job caches.
				runFio(fioJob{"warm-up", "write", "4k", 1}, warm, "--size=1M")
				before = cachedKiB()
			}
			measured[i] = runFio(job, file)
			if write && i < 2 {
				where := []string{"in the volume", "on the pool's filesystem"}[i]
				cacheRows = append(cacheRows, []string{job.name + ", " + where, mib(cachedKiB() - before),
					mib(residentKiB(cachedFile[i]))})
			}
		}
		v, f, b := measured[0], measured[1], measured[2]
		recorded.Fio = append(recorded.Fio, results.FioJob{Job: job.name, Random: strings.HasPrefix(job.rw, "rand"),
			Volume: v.throughput(), PoolFS: f.throughput(), BareLoop: b.throughput()})
		rows = append(rows, []string{job.name, fmt.Sprintf("%.0f", v.iops), fmt.Sprintf("%.0f", v.mibps),
			fmt.Sprintf("%.0f", f.iops), fmt.Sprintf("%.0f", f.mibps), ratio(v.iops, f.iops),
			fmt.Sprintf("%.0f", b.iops), ratio(b.iops, f.iops), ratio(v.iops, b.iops)})
	}
	vol.unpublish(target)
	vol.detach()

	var st syscall.Statfs_t
	must(syscall.Statfs(pool, &st))
	fmt.Printf("fio %s per job, file of %s, libaio, direct=1, end_fsync=1: in a published 2 GiB ext4 volume vs on a file\n"+
		"in the pool's own filesystem (statfs type 0x%x, the same disk). Floor: the same job in ext4 on a 2 GiB image on\n"+
		"that filesystem, attached by losetup --direct-io=on and mounted without the driver (the bare loop device).\n\n",
		cfg.fioRuntime, cfg.fioSize, uint64(st.Type))
	table([]string{"job", "volume IOPS", "volume MiB/s", "pool fs IOPS", "pool fs MiB/s", "volume / pool fs",
		"bare loop IOPS", "bare loop / pool fs", "volume / bare loop"}, rows)
	fmt.Println("\nHost page cache over each write job, caches dropped just before: growth of Cached: in /proc/meminfo\n" +
		"(the whole host, so other processes' reads count too), and the pages of the volume's image (in the\n" +
		"volume) or of fio's file (on the pool's filesystem) resident in the page cache after the job (mincore(2)).")
	fmt.Println()
	table([]string{"write job", "Cached: growth", "file resident in page cache"}, cacheRows)
}

// residentKiB is how much of a file is in the page cache, by mincore(2) on a read-only mapping.
func residentKiB(path string) int64 {
	f, err := os.Open(path)
	must(err)
	defer f.Close()
	info, err := f.Stat()
	must(err)
	if info.Size() == 0 {
		return 0
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(info.Size()), unix.PROT_READ, unix.MAP_SHARED)
	must(err)
	defer unix.Munmap(data)
	page := int64(os.Getpagesize())
	vec := make([]byte, (info.Size()+page-1)/page)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&data[0])), uintptr(len(data)),
		uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		fatalf("mincore %s: %v", path, errno)
	}
	var resident int64
	for _, v := range vec {
		resident += int64(v & 1)
	}
	return resident * page / kib
}
