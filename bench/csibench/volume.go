package main

import (
	"fmt"
	"os"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

const (
	kib = int64(1) << 10
	mb  = int64(1) << 20
	gib = int64(1) << 30
)

var writer = &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}

func ext4Cap() *csi.VolumeCapability {
	return &csi.VolumeCapability{AccessMode: writer,
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: "ext4"}}}
}

func blockCap() *csi.VolumeCapability {
	return &csi.VolumeCapability{AccessMode: writer,
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}}
}

// createVolume creates a volume and returns its ID.
func (p *proc) createVolume(name string, size int64, c *csi.VolumeCapability) string {
	ctx, cancel := background()
	defer cancel()
	resp, err := p.ctl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: name,
		CapacityRange: &csi.CapacityRange{RequiredBytes: size}, VolumeCapabilities: []*csi.VolumeCapability{c}})
	if err != nil {
		fatalf("CreateVolume %s: %v", name, err)
	}
	return resp.Volume.VolumeId
}

func (p *proc) deleteVolume(id string) {
	ctx, cancel := background()
	defer cancel()
	_, err := p.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id})
	if err != nil {
		fatalf("DeleteVolume %s: %v", id, err)
	}
}

// onceMore runs an untimed step, and once more if it fails (see timedOrRetried), with a warning.
func onceMore(f func() error) {
	if err := f(); err != nil {
		fmt.Fprintf(os.Stderr, "csibench: retrying once after: %v\n", err)
		must(f())
	}
}

// attached is a volume attached to this node (ControllerPublishVolume), ready to stage.
type attached struct {
	p              *proc
	id             string
	cap            *csi.VolumeCapability
	publishContext map[string]string
	staging        string
}

// attach creates a volume and publishes it to the driver's node; not timed.
func (p *proc) attach(name string, size int64, c *csi.VolumeCapability) *attached {
	id := p.createVolume(name, size, c)
	ctx, cancel := background()
	defer cancel()
	info, err := p.node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	must(err)
	resp, err := p.ctl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: id,
		NodeId: info.NodeId, VolumeCapability: c})
	if err != nil {
		fatalf("ControllerPublishVolume %s: %v", id, err)
	}
	return &attached{p: p, id: id, cap: c, publishContext: resp.PublishContext}
}

func (a *attached) stage(staging string) { onceMore(func() error { return a.tryStage(staging) }) }

func (a *attached) tryStage(staging string) error {
	ctx, cancel := background()
	defer cancel()
	_, err := a.p.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: a.id,
		PublishContext: a.publishContext, StagingTargetPath: staging, VolumeCapability: a.cap})
	if err != nil {
		return fmt.Errorf("NodeStageVolume %s: %w", a.id, err)
	}
	a.staging = staging
	return nil
}

func (a *attached) publish(target string) { onceMore(func() error { return a.tryPublish(target) }) }

func (a *attached) tryPublish(target string) error {
	ctx, cancel := background()
	defer cancel()
	_, err := a.p.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: a.id,
		PublishContext: a.publishContext, StagingTargetPath: a.staging, TargetPath: target, VolumeCapability: a.cap})
	if err != nil {
		return fmt.Errorf("NodePublishVolume %s: %w", a.id, err)
	}
	return nil
}

func (a *attached) unpublish(target string) { onceMore(func() error { return a.tryUnpublish(target) }) }

func (a *attached) tryUnpublish(target string) error {
	ctx, cancel := background()
	defer cancel()
	if _, err := a.p.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: a.id, TargetPath: target}); err != nil {
		return fmt.Errorf("NodeUnpublishVolume %s: %w", a.id, err)
	}
	return nil
}

func (a *attached) tryStats(target string) error {
	ctx, cancel := background()
	defer cancel()
	if _, err := a.p.node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: a.id, VolumePath: target}); err != nil {
		return fmt.Errorf("NodeGetVolumeStats %s: %w", a.id, err)
	}
	return nil
}

func (a *attached) unstage() { onceMore(func() error { return a.tryUnstage() }) }

func (a *attached) tryUnstage() error {
	ctx, cancel := background()
	defer cancel()
	if _, err := a.p.node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: a.id, StagingTargetPath: a.staging}); err != nil {
		return fmt.Errorf("NodeUnstageVolume %s: %w", a.id, err)
	}
	a.staging = ""
	return nil
}

// detach unstages (if staged), unpublishes from the node and deletes the volume; not timed.
func (a *attached) detach() {
	if a.staging != "" {
		a.unstage()
	}
	ctx, cancel := background()
	defer cancel()
	_, err := a.p.ctl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: a.id, NodeId: "bench-node"})
	if err != nil {
		fatalf("ControllerUnpublishVolume %s: %v", a.id, err)
	}
	a.p.deleteVolume(a.id)
}
