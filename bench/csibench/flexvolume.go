package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// flexCall runs bin/blockpool-flexvolume as kubelet does (stdout and stderr read together as one
// JSON answer) against the driver p, and fails unless the answer is Success.
func flexCall(p *proc, args ...string) error {
	cmd := exec.Command(filepath.Join(filepath.Dir(cfg.driver), "blockpool-flexvolume"), args...)
	cmd.Env = append(os.Environ(), "CSI_ENDPOINT=unix://"+p.sock)
	out, err := cmd.CombinedOutput()
	var answer struct{ Status, Message string }
	if jerr := json.Unmarshal(out, &answer); jerr != nil || err != nil || answer.Status != "Success" {
		return fmt.Errorf("flexvolume %s: %v: %q", args[0], err, out)
	}
	return nil
}

// flexOptions is what kubelet passes to mount for a PV naming the volume (NewOptionsForDriver).
func flexOptions(volumeID string) string {
	options, err := json.Marshal(map[string]string{
		"kubernetes.io/fsType": "ext4", "kubernetes.io/readwrite": "rw", "kubernetes.io/pvOrVolumeName": "flex-pv",
		"kubernetes.io/pod.name": "bench-0", "kubernetes.io/pod.namespace": "default",
		"kubernetes.io/pod.uid": "6f1d0c9e-3b1a-4c2d-9e8f-0a1b2c3d4e5f", "kubernetes.io/serviceAccount.name": "default",
		"volumeID": volumeID,
	})
	must(err)
	return string(options)
}

// sectionFlexvolume: kubelet's FlexVolume calls, each a start of the launcher and its JVM (with
// the AOT cache), against the same work as CSI calls from this client to the running driver.
func sectionFlexvolume() {
	p := launch(blockpool, "flexvolume", dir("flexvolume", "pool"))
	defer p.stop()
	pods := dir("flexvolume", "pods") // kubelet's pod volume directories; unpublish removes each
	target := func(name string, i int) string { return filepath.Join(pods, name+strconv.Itoa(i)) }
	options := flexOptions(p.createVolume("flex", gib, ext4Cap()))

	var fails failures
	var spawn, initCall timings
	for range cfg.flexIters {
		spawn.timed(func() { must(exec.Command("true").Run()) })
		initCall.timedOrRetried(&fails, func() error { return flexCall(p, "init") })
	}
	// Mounts and unmounts fresh pod directories, as kubelet does for pods coming and going.
	podsComeAndGo := func(name string, mount, unmount *timings) {
		for i := range cfg.flexIters {
			t := target(name, i)
			must(mkdirAll(t))
			mount.timedOrRetried(&fails, func() error { return flexCall(p, "mount", t, options) })
			unmount.timedOrRetried(&fails, func() error { return flexCall(p, "unmount", t) })
		}
	}
	// The volume's only user: mount stages and publishes, unmount unpublishes and unstages.
	var mountAlone, unmountAlone timings
	podsComeAndGo("alone", &mountAlone, &unmountAlone)
	// Another pod keeps the volume staged: mount publishes, unmount unpublishes.
	keep := target("keep", 0)
	must(mkdirAll(keep))
	must(flexCall(p, "mount", keep, options))
	var mountShared, unmountShared timings
	podsComeAndGo("shared", &mountShared, &unmountShared)
	must(flexCall(p, "unmount", keep))

	// The same work as CSI calls of this client, on a volume of its own (formatted by its first stage).
	direct := p.attach("flex-direct", gib, ext4Cap())
	var stagePublish, unpublishUnstage, publish, unpublish timings
	for i := range cfg.flexIters {
		t := target("direct", i)
		stagePublish.timedOrRetried(&fails, func() error {
			if err := direct.tryStage(dir("flexvolume", "staging")); err != nil {
				return err
			}
			return direct.tryPublish(t)
		})
		unpublishUnstage.timedOrRetried(&fails, func() error {
			if err := direct.tryUnpublish(t); err != nil {
				return err
			}
			return direct.tryUnstage()
		})
	}
	direct.stage(dir("flexvolume", "staging"))
	for i := range cfg.flexIters {
		t := target("direct-shared", i)
		publish.timedOrRetried(&fails, func() error { return direct.tryPublish(t) })
		unpublish.timedOrRetried(&fails, func() error { return direct.tryUnpublish(t) })
	}
	direct.unstage()
	direct.detach()

	fmt.Printf("bin/blockpool-flexvolume run %d times per call as kubelet runs it (a launcher and JVM start with the\n"+
		"AOT cache each, stdout and stderr read as one JSON answer), on one 1 GiB ext4 volume: mount and unmount\n"+
		"as its only user (stage + publish, unpublish + unstage), then beside a pod that keeps it staged.\n"+
		"Floors: fork+exec of true(1) for init; for mount and unmount the same CSI calls from this client.\n\n",
		cfg.flexIters)
	table([]string{"operation", "n", "p50", "p90", "p99", "floor p50", "ratio p50"}, [][]string{
		latencyRow("init", initCall, spawn),
		latencyRow("mount (stage + publish)", mountAlone, stagePublish),
		latencyRow("unmount (unpublish + unstage)", unmountAlone, unpublishUnstage),
		latencyRow("mount (publish; staged for another pod)", mountShared, publish),
		latencyRow("unmount (unpublish; another pod stays)", unmountShared, unpublish),
	})
	fails.report()
}
