package main

import (
	"fmt"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// parallel runs f(i) for i in [0, n) on the given number of goroutines and returns the wall time.
func parallel(n, clients int, f func(i int)) time.Duration {
	start := time.Now()
	next := make(chan int)
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return time.Since(start)
}

// listAll pages through volumes or snapshots 100 at a time; it returns each page's time and the
// number of entries.
func listAll(p *proc, snapshots bool) (pages timings, entries int) {
	token := ""
	for {
		ctx, cancel := background()
		start := time.Now()
		var next string
		if snapshots {
			resp, err := p.ctl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{MaxEntries: 100, StartingToken: token})
			must(err)
			entries += len(resp.Entries)
			next = resp.NextToken
		} else {
			resp, err := p.ctl.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: 100, StartingToken: token})
			must(err)
			entries += len(resp.Entries)
			next = resp.NextToken
		}
		pages = append(pages, time.Since(start))
		cancel()
		if next == "" {
			return pages, entries
		}
		token = next
	}
}

// settle lets the filesystem write back what a series of creates or deletes left (the repository's
// disk may be mounted with discard, which makes the next commits slow), so that a timed series
// does not pay for the one before.
func settle() {
	syscall.Sync()
	time.Sleep(2 * time.Second)
}

// sectionList: listing and creating in a pool with many volumes and snapshots, and starting on it.
func sectionList() {
	pool := dir("list", "pool")
	p := launch(blockpool, "list", pool)
	defer p.stop()
	const sample = 100
	create := func(prefix string) (t timings, ids []string) {
		for i := range sample {
			t.timed(func() { ids = append(ids, p.createVolume(prefix+strconv.Itoa(i), mb, blockCap())) })
		}
		return t, ids
	}
	// ControllerPublishVolume and then ControllerUnpublishVolume of each volume, to the driver's
	// node: an attach counts the node's attachments against its limit.
	publish := func(ids []string) (pub, unpub timings) {
		for _, id := range ids {
			ctx, cancel := background()
			pub.timed(func() {
				_, err := p.ctl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: id,
					NodeId: "bench-node", VolumeCapability: blockCap()})
				if err != nil {
					fatalf("ControllerPublishVolume %s: %v", id, err)
				}
			})
			unpub.timed(func() {
				_, err := p.ctl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: id, NodeId: "bench-node"})
				if err != nil {
					fatalf("ControllerUnpublishVolume %s: %v", id, err)
				}
			})
			cancel()
		}
		return pub, unpub
	}
	// Small sparse block volumes: 1 MiB, which block access allows (a filesystem would need more).
	// A thousand creates and deletes warm the driver up (JIT, caches) first, so that the empty
	// and the full pool are compared warm.
	parallel(1000, cfg.listClients, func(i int) {
		p.deleteVolume(p.createVolume("list-warm-"+strconv.Itoa(i), mb, blockCap()))
	})
	settle()
	createEmpty, emptyIDs := create("list-empty-")
	publishEmpty, unpublishEmpty := publish(emptyIDs)
	ids := make([]string, cfg.listVolumes-sample)
	fill := parallel(cfg.listVolumes-sample, cfg.listClients, func(i int) {
		ids[i] = p.createVolume("list-"+strconv.Itoa(i), mb, blockCap())
	})
	snapFill := parallel(cfg.listSnapshots, cfg.listClients, func(i int) {
		ctx, cancel := background()
		defer cancel()
		_, err := p.ctl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{SourceVolumeId: ids[i%len(ids)], Name: "list-snap-" + strconv.Itoa(i)})
		if err != nil {
			fatalf("CreateSnapshot: %v", err)
		}
	})
	// The same number of creates on the full pool, deleted again so the pool keeps its size.
	settle()
	createFull, extra := create("list-full-")
	publishFull, unpublishFull := publish(extra)
	for _, id := range extra {
		p.deleteVolume(id)
	}

	volPages, volumes := listAll(p, false)
	snapPages, snapshots := listAll(p, true)
	for range 5 {
		listAll(p, false)
		listAll(p, true)
	}
	rssAfter := p.rss()
	p.stop()
	// Starts on an empty and on the full pool in turn, so that both see the same noise.
	var emptyStarts, fullStarts timings
	for range cfg.listStarts {
		emptyStarts = append(emptyStarts, startTimes(blockpool, dir("list", "empty-pool"), 1)...)
		fullStarts = append(fullStarts, startTimes(blockpool, pool, 1)...)
	}

	fmt.Printf("Filled through the driver with %d clients: %d volumes (1 MiB, block) in %.1f s, %d snapshots in %.1f s.\n"+
		"Listing pages of 100 entries; the pool holds %d volumes and %d snapshots.\n\n",
		cfg.listClients, cfg.listVolumes, (createEmpty.sum() + fill).Seconds(), cfg.listSnapshots, snapFill.Seconds(), volumes, snapshots)
	table([]string{"measure", "p50", "p90", "max", "whole"}, [][]string{
		{fmt.Sprintf("ListVolumes page (%d pages)", len(volPages)), ms(volPages.q(.5)), ms(volPages.q(.9)), ms(volPages.q(1)), ms(volPages.sum())},
		{fmt.Sprintf("ListSnapshots page (%d pages)", len(snapPages)), ms(snapPages.q(.5)), ms(snapPages.q(.9)), ms(snapPages.q(1)), ms(snapPages.sum())},
	})
	fmt.Println()
	table([]string{"measure", "empty pool", "full pool", "full / empty"}, [][]string{
		{fmt.Sprintf("CreateVolume p50 (%d sequential)", sample), ms(createEmpty.q(.5)), ms(createFull.q(.5)), ratio(float64(createFull.q(.5)), float64(createEmpty.q(.5)))},
		{fmt.Sprintf("ControllerPublishVolume p50 (%d sequential)", sample), ms(publishEmpty.q(.5)), ms(publishFull.q(.5)), ratio(float64(publishFull.q(.5)), float64(publishEmpty.q(.5)))},
		{fmt.Sprintf("ControllerUnpublishVolume p50 (%d sequential)", sample), ms(unpublishEmpty.q(.5)), ms(unpublishFull.q(.5)), ratio(float64(unpublishFull.q(.5)), float64(unpublishEmpty.q(.5)))},
		{fmt.Sprintf("start → ready p50 (%d starts)", cfg.listStarts), ms(emptyStarts.q(.5)), ms(fullStarts.q(.5)), ratio(float64(fullStarts.q(.5)), float64(emptyStarts.q(.5)))},
		{"RSS after listing everything 5 times", "", mib(rssAfter), ""},
	})
}
