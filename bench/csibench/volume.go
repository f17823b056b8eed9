package main

import (
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

func (a *attached) stage(staging string) {
	ctx, cancel := background()
	defer cancel()
	_, err := a.p.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: a.id,
		PublishContext: a.publishContext, StagingTargetPath: staging, VolumeCapability: a.cap})
	if err != nil {
		fatalf("NodeStageVolume %s: %v", a.id, err)
	}
	a.staging = staging
}

func (a *attached) publish(target string) {
	ctx, cancel := background()
	defer cancel()
	_, err := a.p.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: a.id,
		PublishContext: a.publishContext, StagingTargetPath: a.staging, TargetPath: target, VolumeCapability: a.cap})
	if err != nil {
		fatalf("NodePublishVolume %s: %v", a.id, err)
	}
}

func (a *attached) unpublish(target string) {
	ctx, cancel := background()
	defer cancel()
	if _, err := a.p.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: a.id, TargetPath: target}); err != nil {
		fatalf("NodeUnpublishVolume %s: %v", a.id, err)
	}
}

func (a *attached) unstage() {
	ctx, cancel := background()
	defer cancel()
	if _, err := a.p.node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: a.id, StagingTargetPath: a.staging}); err != nil {
		fatalf("NodeUnstageVolume %s: %v", a.id, err)
	}
	a.staging = ""
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
