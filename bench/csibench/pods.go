package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// launchJar, when set, is the jar the next launched blockpool runs (the launcher's BLOCKPOOL_JAR,
// with the AOT cache beside it): to measure another build in the same run.
var launchJar string

// sectionPods: eight pods of one staged volume start at once, each publishing its own target as
// kubelet does (ABORTED is retried after 0.5 s, doubling), on this build and, with -old-jar,
// another one, in alternating rounds.
func sectionPods() {
	type build struct {
		name string
		p    *proc
		vol  *attached
		all  timings
		abrt int64
	}
	builds := []*build{{name: "this build"}}
	if cfg.oldJar != "" {
		builds = append(builds, &build{name: "-old-jar " + filepath.Base(filepath.Dir(cfg.oldJar)) + "/" + filepath.Base(cfg.oldJar)})
	}
	for i, b := range builds {
		tag := "pods" + strconv.Itoa(i)
		if i > 0 {
			launchJar = cfg.oldJar
		}
		b.p = launch(blockpool, tag, poolDir(tag, "pool"))
		launchJar = ""
		defer b.p.stop()
		time.Sleep(cfg.settle)
		b.vol = b.p.attach("shared", gib, ext4Cap())
		b.vol.stage(dir(tag, "staging"))
	}
	for round := range cfg.podRounds {
		for i, b := range builds {
			targets := dir("pods"+strconv.Itoa(i), "r"+strconv.Itoa(round))
			var aborted atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for pod := range cfg.pods {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					target := filepath.Join(targets, "pod"+strconv.Itoa(pod))
					kubeletPublish(b.vol, target, pod%3 == 2, &aborted)
				}()
			}
			began := time.Now()
			close(start)
			wg.Wait()
			b.all = append(b.all, time.Since(began))
			b.abrt += aborted.Load()
			for pod := range cfg.pods {
				b.vol.unpublish(filepath.Join(targets, "pod"+strconv.Itoa(pod)))
			}
		}
	}
	for _, b := range builds {
		b.vol.unstage()
		b.vol.detach()
	}
	fmt.Printf("One 1 GiB ext4 volume staged; %d pods at once each NodePublishVolume their own target (every third\n"+
		"read-only), retrying ABORTED after 0.5 s, doubling, as kubelet does; the time until all %d are published,\n"+
		"%d rounds per build, the builds alternating.\n\n", cfg.pods, cfg.pods, cfg.podRounds)
	rows := [][]string{}
	for _, b := range builds {
		rows = append(rows, []string{b.name, strconv.Itoa(len(b.all)), ms(b.all.q(.5)), ms(b.all.q(.9)), ms(b.all.q(1)),
			strconv.FormatInt(b.abrt, 10)})
	}
	table([]string{"driver", "rounds", "all published p50", "p90", "max", "ABORTED answers"}, rows)
}

// kubeletPublish publishes until it succeeds, retrying ABORTED with kubelet's exponential backoff
// (its first pause is 500 ms); anything else is fatal.
func kubeletPublish(a *attached, target string, readOnly bool, aborted *atomic.Int64) {
	pause := 500 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		_, err := a.p.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: a.id,
			PublishContext: a.publishContext, StagingTargetPath: a.staging, TargetPath: target,
			VolumeCapability: a.cap, Readonly: readOnly})
		cancel()
		if err == nil {
			return
		}
		if s, ok := status.FromError(err); !ok || s.Code() != codes.Aborted {
			fatalf("NodePublishVolume %s at %s: %v", a.id, target, errors.Unwrap(err))
		}
		aborted.Add(1)
		time.Sleep(pause)
		pause *= 2
	}
}
