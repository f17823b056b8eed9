package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// metadataBlock is the granularity of the read-everything method, as csi-driver-host-path reads.
const metadataBlock = 4 * kib

// sectionMetadata: GetMetadataAllocated and GetMetadataDelta (changed block tracking) of a 1 GiB
// volume on the reflink XFS pool, and on an ext4 pool (the work directory's disk), which shares no
// extents; side by side with reading and comparing the images themselves.
func sectionMetadata() {
	if cfg.xfs == "" {
		fatalf("-xfs is required for the metadata section")
	}
	const dataMiB, changed = 100, 256
	fmt.Printf("A 1 GiB raw block volume: %d MiB of data in 1 MiB pieces, one every 10 MiB, snapshotted; then %d\n"+
		"scattered 4 KiB blocks written, snapshotted again. Each call timed from the request to the end of its\n"+
		"stream, %d times. The read-everything method (what csi-driver-host-path does) reads the images in %d KiB\n"+
		"blocks and compares them, in this process: from the page cache (all runs after a first read), and once\n"+
		"after dropping the caches. Pools: XFS (reflink=1, on a loop device over a file on the disk), and the\n"+
		"disk's own filesystem, which shares no extents, so that the driver compares what the images hold.\n\n",
		dataMiB, changed, cfg.metadataIters, metadataBlock/kib)
	var rows [][]string
	for _, pool := range []struct{ name, tag, dir string }{
		{"XFS reflink", "metadata-xfs", filepath.Join(cfg.xfs, "metadata-pool")},
		{fsType(cfg.work), "metadata-disk", dir("metadata", "pool")},
	} {
		rows = append(rows, metadataRows(pool.name, pool.tag, pool.dir, dataMiB, changed)...)
	}
	table([]string{"pool", "operation", "n", "p50", "p90", "p99", "reports", "read everything p50", "cold", "ratio p50"}, rows)
}

// metadataRows makes the volume and its two snapshots in a pool and times the calls there.
func metadataRows(name, tag, pool string, dataMiB, changed int64) [][]string {
	p := launch(blockpool, tag, pool)
	defer p.stop()
	meta := csi.NewSnapshotMetadataClient(p.conn)
	id := p.createVolume("metadata-source", gib, blockCap())
	// The volume's image, written as its loop device would write it (the pool layout: docs/architecture.md).
	image := filepath.Join(pool, "volumes", id+".img")
	rng := rand.New(rand.NewChaCha8([32]byte{7}))
	for i := range dataMiB {
		writeAt(image, i*10*mb, mb, rng)
	}
	base := p.snapshot("metadata-base", id)
	for range changed {
		writeAt(image, rng.Int64N(gib/metadataBlock)*metadataBlock, metadataBlock, rng)
	}
	target := p.snapshot("metadata-target", id)
	baseImage := filepath.Join(pool, "snapshots", base+".img")
	targetImage := filepath.Join(pool, "snapshots", target+".img")

	var allocated, delta, readAllocated, readDelta timings
	var allocatedBytes, deltaBytes, deltaTuples, readAllocatedBytes, readDeltaBytes int64
	for range cfg.metadataIters {
		allocated.timed(func() { allocatedBytes, _ = p.allocated(meta, target) })
		delta.timed(func() { deltaBytes, deltaTuples = p.delta(meta, base, target) })
	}
	// the read-everything method from the page cache, its best case: read once before timing
	readAllocatedBytes = nonZeroBytes(targetImage)
	for range cfg.metadataIters {
		readAllocated.timed(func() { readAllocatedBytes = nonZeroBytes(targetImage) })
		readDelta.timed(func() { readDeltaBytes = differingBytes(baseImage, targetImage) })
	}
	var coldAllocated, coldDelta timings
	dropCaches()
	coldAllocated.timed(func() { nonZeroBytes(targetImage) })
	dropCaches()
	coldDelta.timed(func() { differingBytes(baseImage, targetImage) })
	return [][]string{
		append([]string{name}, metadataRow("GetMetadataAllocated (target)", allocated,
			fmt.Sprintf("%d MiB", allocatedBytes/mb), readAllocated, coldAllocated, readAllocatedBytes)...),
		append([]string{name}, metadataRow("GetMetadataDelta (base → target)", delta,
			fmt.Sprintf("%d tuples, %d KiB", deltaTuples, deltaBytes/kib), readDelta, coldDelta, readDeltaBytes)...),
	}
}

// fsType is the type of the filesystem path is on, as findmnt(8) names it.
func fsType(path string) string {
	out, err := exec.Command("findmnt", "-n", "-o", "FSTYPE", "-T", path).Output()
	must(err)
	return strings.TrimSpace(string(out))
}

func metadataRow(name string, t timings, reports string, read, cold timings, readBytes int64) []string {
	return []string{name, strconv.Itoa(len(t)), ms(t.q(.5)), ms(t.q(.9)), ms(t.q(.99)), reports,
		fmt.Sprintf("%s (%d KiB)", ms(read.q(.5)), readBytes/kib), ms(cold.q(.5)),
		ratio(float64(read.q(.5)), float64(t.q(.5)))}
}

func (p *proc) snapshot(name, volume string) string {
	ctx, cancel := background()
	defer cancel()
	resp, err := p.ctl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{SourceVolumeId: volume, Name: name})
	must(err)
	return resp.Snapshot.SnapshotId
}

func (p *proc) deleteSnapshot(id string) {
	ctx, cancel := background()
	defer cancel()
	if _, err := p.ctl.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: id}); err != nil {
		fatalf("DeleteSnapshot %s: %v", id, err)
	}
}

// allocated streams the snapshot's data ranges: their bytes and tuples.
func (p *proc) allocated(meta csi.SnapshotMetadataClient, snapshot string) (size, tuples int64) {
	ctx, cancel := background()
	defer cancel()
	stream, err := meta.GetMetadataAllocated(ctx, &csi.GetMetadataAllocatedRequest{SnapshotId: snapshot})
	must(err)
	return drain(stream.Recv)
}

// delta streams the ranges in which target differs from base: their bytes and tuples.
func (p *proc) delta(meta csi.SnapshotMetadataClient, base, target string) (size, tuples int64) {
	ctx, cancel := background()
	defer cancel()
	stream, err := meta.GetMetadataDelta(ctx, &csi.GetMetadataDeltaRequest{BaseSnapshotId: base, TargetSnapshotId: target})
	must(err)
	return drain(stream.Recv)
}

// drain reads a metadata stream to its end: the bytes and the tuples it reported.
func drain[R interface{ GetBlockMetadata() []*csi.BlockMetadata }](recv func() (R, error)) (size, tuples int64) {
	for {
		resp, err := recv()
		if errors.Is(err, io.EOF) {
			return size, tuples
		}
		must(err)
		for _, b := range resp.GetBlockMetadata() {
			size, tuples = size+b.SizeBytes, tuples+1
		}
	}
}

func writeAt(path string, offset, length int64, rng *rand.Rand) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	must(err)
	defer f.Close()
	buf := make([]byte, length)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	_, err = f.WriteAt(buf, offset)
	must(err)
	must(f.Sync())
}

// nonZeroBytes reads the whole image and counts the bytes of its 4 KiB blocks that are not all zeros.
func nonZeroBytes(path string) (n int64) {
	zero := make([]byte, metadataBlock)
	eachBlock(path, "", func(block, _ []byte) {
		if !bytes.Equal(block, zero[:len(block)]) {
			n += int64(len(block))
		}
	})
	return n
}

// differingBytes reads both images whole and counts the bytes of the 4 KiB blocks that differ.
func differingBytes(base, target string) (n int64) {
	eachBlock(target, base, func(block, other []byte) {
		if !bytes.Equal(block, other) {
			n += int64(len(block))
		}
	})
	return n
}

// eachBlock reads path (and other, when given) in 1 MiB reads and hands each 4 KiB block to f.
func eachBlock(path, other string, f func(block, other []byte)) {
	in, err := os.Open(path)
	must(err)
	defer in.Close()
	var second *os.File
	if other != "" {
		second, err = os.Open(other)
		must(err)
		defer second.Close()
	}
	buf, buf2 := make([]byte, mb), make([]byte, mb)
	for offset := int64(0); ; offset += mb {
		n, err := in.ReadAt(buf, offset)
		if n == 0 && errors.Is(err, io.EOF) {
			return
		}
		if err != nil && !errors.Is(err, io.EOF) {
			must(err)
		}
		if second != nil {
			m, err := second.ReadAt(buf2[:n], offset)
			if err != nil && !errors.Is(err, io.EOF) {
				must(err)
			}
			clear(buf2[m:n])
		}
		for b := 0; b < n; b += int(metadataBlock) {
			end := min(n, b+int(metadataBlock))
			f(buf[b:end], buf2[b:end])
		}
	}
}
