package main

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"blockpool.dev/bench/csibench/results"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
)

// row of a latency table: the operation's n, p50, p90, p99 and, where there is one, the kernel's
// floor for the same work (its p50) and the ratio of the two p50s.
func latencyRow(name string, t timings, floor timings) []string {
	return []string{name, strconv.Itoa(len(t)), ms(t.q(.5)), ms(t.q(.9)), ms(t.q(.99)),
		ms(floor.q(.5)), ratio(float64(t.q(.5)), float64(floor.q(.5)))}
}

var latencyHeader = []string{"operation", "n", "p50", "p90", "p99", "kernel floor p50", "ratio p50"}

// cold is the first calls of a series, where caches and the JIT are cold.
const cold = 20

// sectionNode: publish/unpublish, stats, and stage+publish of fresh volumes, on real loop devices.
func sectionNode() {
	p := launch(blockpool, "node", poolDir("node", "pool"))
	defer p.stop()
	// A node plugin gets its first volume call only after node-driver-registrar has registered
	// it with kubelet; in that time the JIT compiles what the AOT cache's training compiled
	// (-settle 0 times the calls at once after ready).
	time.Sleep(cfg.settle)
	vol := p.attach("node", gib, ext4Cap())
	vol.stage(dir("node", "staging", "main"))
	targets := dir("node", "targets") // a pod's volume directory; the driver makes each target in it

	var fails failures
	var publish, unpublish timings
	for i := range cfg.nodeIters {
		target := filepath.Join(targets, "t"+strconv.Itoa(i))
		publish.timedOrRetried(&fails, func() error { return vol.tryPublish(target) })
		unpublish.timedOrRetried(&fails, func() error { return vol.tryUnpublish(target) })
	}
	// The floor: bind mount(2) and umount2(2) of one temporary directory onto another.
	var mount, umount timings
	src, dst := dir("node", "floor", "src"), dir("node", "floor", "dst")
	for range cfg.nodeIters {
		mount.timed(func() { must(unix.Mount(src, dst, "", unix.MS_BIND, "")) })
		umount.timed(func() { must(unix.Unmount(dst, 0)) })
	}

	statsTarget := filepath.Join(targets, "stats")
	vol.publish(statsTarget)
	var stats, statfs timings
	for range cfg.nodeIters {
		stats.timedOrRetried(&fails, func() error { return vol.tryStats(statsTarget) })
	}
	for range cfg.nodeIters {
		var st unix.Statfs_t
		statfs.timed(func() { must(unix.Statfs(statsTarget, &st)) })
	}
	vol.unpublish(statsTarget)
	vol.detach()
	// What every call above costs before any host work: a call the driver answers from memory.
	var roundTrip timings
	for range cfg.nodeIters {
		roundTrip.timedOrRetried(&fails, func() error {
			ctx, cancel := background()
			defer cancel()
			_, err := p.node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
			return err
		})
	}

	var stage, freshPublish, unstage timings
	for i := range cfg.stageIters {
		fresh := p.attach("fresh-"+strconv.Itoa(i), gib, ext4Cap())
		staging, target := dir("node", "staging", "f"+strconv.Itoa(i)), filepath.Join(targets, "f"+strconv.Itoa(i))
		stage.timedOrRetried(&fails, func() error { return fresh.tryStage(staging) })
		freshPublish.timedOrRetried(&fails, func() error { return fresh.tryPublish(target) })
		fresh.unpublish(target)
		unstage.timedOrRetried(&fails, fresh.tryUnstage)
		fresh.detach()
	}

	fmt.Printf("The driver idle for %v after ready; one 1 GiB ext4 volume staged; NodePublishVolume + NodeUnpublishVolume to a fresh target %d times\n"+
		"(cold: the first %d); NodeGetVolumeStats on a published target; then %d fresh 1 GiB ext4 volumes\n"+
		"(CreateVolume + ControllerPublishVolume not timed) staged (attach, mkfs, mount), published, unstaged.\n"+
		"Floors: bind mount(2) / umount2(2) of a temporary directory, statfs(2) of the target; and the gRPC\n"+
		"round trip of NodeGetCapabilities, which the driver answers without touching the host.\n\n",
		cfg.settle, cfg.nodeIters, cold, cfg.stageIters)
	table(latencyHeader, [][]string{
		latencyRow(fmt.Sprintf("NodePublishVolume (first %d)", cold), publish[:min(cold, len(publish))], mount[:min(cold, len(mount))]),
		latencyRow("NodePublishVolume", publish, mount),
		latencyRow(fmt.Sprintf("NodeUnpublishVolume (first %d)", cold), unpublish[:min(cold, len(unpublish))], umount[:min(cold, len(umount))]),
		latencyRow("NodeUnpublishVolume", unpublish, umount),
		latencyRow("NodeGetVolumeStats", stats, statfs),
		latencyRow("NodeGetCapabilities (the round trip)", roundTrip, nil),
		latencyRow("NodeStageVolume (fresh 1 GiB ext4)", stage, nil),
		latencyRow("NodePublishVolume (after that stage)", freshPublish, nil),
		latencyRow("NodeUnstageVolume", unstage, nil),
	})
	fails.report()
}

// sectionSnapshot: CreateSnapshot of a 1 GiB volume with data on an XFS reflink pool.
func sectionSnapshot() {
	if cfg.xfs == "" {
		fatalf("-xfs is required for the snapshot section")
	}
	pool := filepath.Join(cfg.xfs, "pool")
	p := launch(blockpool, "snapshot", pool)
	defer p.stop()
	vol := p.attach("snapshot-source", gib, ext4Cap())
	vol.stage(dir("snapshot", "staging"))
	target := filepath.Join(dir("snapshot", "targets"), "t")
	vol.publish(target)
	const dataMiB = 256
	writeData(filepath.Join(target, "data"), dataMiB)
	vol.unpublish(target)
	vol.unstage()

	var create, del timings
	var ids []string
	for i := range cfg.snapshots {
		create.timed(func() {
			ctx, cancel := background()
			defer cancel()
			resp, err := p.ctl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{SourceVolumeId: vol.id, Name: "snap-" + strconv.Itoa(i)})
			must(err)
			ids = append(ids, resp.Snapshot.SnapshotId)
		})
	}
	for _, id := range ids {
		del.timed(func() {
			ctx, cancel := background()
			defer cancel()
			_, err := p.ctl.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: id})
			must(err)
		})
	}
	// The floor: FICLONE of the volume's image (read only; the pool layout is in docs/architecture.md)
	// into a new file beside the pool, then unlink(2).
	image := filepath.Join(pool, "volumes", vol.id+".img")
	clones := filepath.Join(cfg.xfs, "floor")
	must(mkdirAll(clones))
	var clone, unlink timings
	for i := range cfg.snapshots {
		path := filepath.Join(clones, "c"+strconv.Itoa(i))
		clone.timed(func() { must(ficlone(image, path)) })
	}
	for i := range cfg.snapshots {
		unlink.timed(func() { must(unix.Unlink(filepath.Join(clones, "c"+strconv.Itoa(i)))) })
	}
	vol.detach()

	fmt.Printf("A 1 GiB ext4 volume with %d MiB written, on a pool on XFS (reflink=1, on a loop device over a file on\n"+
		"the disk); CreateSnapshot of it %d times, then DeleteSnapshot of each. Floor: ioctl(FICLONE) of its image\n"+
		"into a new file on the same XFS, then unlink(2).\n\n", dataMiB, cfg.snapshots)
	table(latencyHeader, [][]string{
		latencyRow("CreateSnapshot", create, clone),
		latencyRow("DeleteSnapshot", del, unlink),
	})
	snapshotsBySize(p, pool, clones)
}

// snapshotStride spreads a volume's data for snapshotsBySize: 1 MiB of every 16 MiB, so that the
// data, and the extents a reflink copies, grow with the volume's size.
const snapshotStride = 16 * mb

// snapshotsBySize: CreateSnapshot of raw block volumes of each size in -snapshot-sizes, -snapshots
// times each, beside ioctl(FICLONE) of the volume's image; the pool holds one volume at a time.
func snapshotsBySize(p *proc, pool, clones string) {
	var rows [][]string
	for _, field := range strings.Split(cfg.snapshotSizes, ",") {
		sizeGiB, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || sizeGiB < 1 {
			fatalf("-snapshot-sizes: %q is no whole number of GiB", field)
		}
		size := int64(sizeGiB) * gib
		id := p.createVolume("snapshot-size-"+strconv.Itoa(sizeGiB), size, blockCap())
		// The volume's image, written as its loop device would write it (the pool layout: docs/architecture.md).
		image := filepath.Join(pool, "volumes", id+".img")
		rng := rand.New(rand.NewChaCha8([32]byte{byte(sizeGiB)}))
		for offset := int64(0); offset < size; offset += snapshotStride {
			writeAt(image, offset, mb, rng)
		}
		// Each snapshot is deleted before the next: the pool promises every snapshot the blocks it
		// holds, and -snapshots of the largest volume would not fit beside it.
		var create, clone timings
		for i := range cfg.snapshots {
			var snapshot string
			create.timed(func() { snapshot = p.snapshot(fmt.Sprintf("size-%d-%d", sizeGiB, i), id) })
			p.deleteSnapshot(snapshot)
			copied := filepath.Join(clones, fmt.Sprintf("size-%d-%d", sizeGiB, i))
			clone.timed(func() { must(ficlone(image, copied)) })
			must(unix.Unlink(copied))
		}
		p.deleteVolume(id)
		dataMiB := int(size / snapshotStride)
		rows = append(rows, []string{fmt.Sprintf("%d GiB", sizeGiB), fmt.Sprintf("%d MiB", dataMiB),
			strconv.Itoa(len(create)), ms(create.q(.5)), ms(create.q(.9)), ms(clone.q(.5)),
			ratio(float64(create.q(.5)), float64(clone.q(.5)))})
		recorded.Snapshots = append(recorded.Snapshots, results.SnapshotAtSize{SizeGiB: sizeGiB, DataMiB: dataMiB,
			N: len(create), P50: millis(create.q(.5)), P90: millis(create.q(.9)), FicloneP50: millis(clone.q(.5))})
	}
	fmt.Printf("\nBy the volume's size: raw block volumes on the same pool holding 1 MiB of random data in every %d MiB\n"+
		"(so a reflink copies as many extents more as the volume is larger), each snapshotted %d times, every\n"+
		"snapshot deleted before the next; floor: ioctl(FICLONE) of its image as many times, each copy unlinked.\n\n", snapshotStride/mb, cfg.snapshots)
	table([]string{"volume", "data", "n", "CreateSnapshot p50", "p90", "FICLONE p50", "ratio p50"}, rows)
}

// ficlone makes dst a reflink copy of src.
func ficlone(src, dst string) error {
	in, err := unix.Open(src, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(in)
	out, err := unix.Open(dst, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	defer unix.Close(out)
	return unix.IoctlFileClone(out, in)
}
