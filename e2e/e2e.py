#!/usr/bin/env python3
"""blockpool end to end: the real control plane, the real sidecars and the real kubelet code
drive the driver on this host (see cluster.py for the setup). Every flow is checked on the
Kubernetes objects and on the host (pool files, mounts, loop devices) and timed; the timings
are printed, never asserted. Ends with "e2e: N passed, N failed, N skipped"."""

import datetime
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
from pathlib import Path

import cbt
import cluster as cl
import helm
import host
from cluster import DRIVER_NAME, NAMESPACE, NODE, ON_HOST, POD, RECONCILED, SCHEDULER, pvc, quantity
from node_local import NodeLocal

GI = 1 << 30
NS = "default"
DATA = "e2e-data"  # a file the test writes into a volume, to find again in its snapshot and clone


class Skip(Exception):
    pass


def pod(name, volume, block=False, fs_group=None):
    c = {"name": "app", "image": "registry.k8s.io/pause:3.10"}
    if block:
        c["volumeDevices"] = [{"name": "data", "devicePath": "/dev/xvda"}]
    else:
        c["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    spec = {"containers": [c], "volumes": [{"name": "data", **volume}], "terminationGracePeriodSeconds": 0,
            # no projected token volume: the only mounts in the test's pods are the driver's
            "automountServiceAccountToken": False}
    if fs_group is not None:
        spec["securityContext"] = {"fsGroup": fs_group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS}, "spec": spec}


class E2E:
    node_name = NODE  # the node the flows' pods run on

    def __init__(self, c: cl.Cluster):
        self.c = c
        self.results = []  # (name, "PASS"|"FAIL"|"SKIP", seconds, message)
        self.volumes = {}  # claim name -> what the test saw of its volume
        self.pods = {}  # pod name -> uid

    # ---- running flows -----------------------------------------------------------------

    def flow(self, name, fn, *args):
        start = time.monotonic()
        try:
            fn(*args)
            outcome, msg = "PASS", ""
        except Skip as e:
            outcome, msg = "SKIP", str(e)
        except Exception as e:  # noqa: BLE001 - any error fails the flow, and the run ends there
            outcome, msg = "FAIL", f"{type(e).__name__}: {e}"
            traceback.print_exc(file=sys.stdout)
        took = time.monotonic() - start
        self.results.append((name, outcome, took, msg))
        print(f"  {outcome}  {name}  ({took:.1f} s){'  ' + msg if msg else ''}", flush=True)
        return outcome

    def run(self, steps):
        """Runs the steps in order until one fails: the flows build on each other, so the ones
        after a failure would only wait out their bounds. They are reported not run, naming it."""
        failed = None
        for name, fn, *args in steps:
            if failed is None:
                if self.flow(name, fn, *args) == "FAIL":
                    failed = name
            else:
                self.results.append((name, "FAIL", 0, f"not run: {failed!r} failed"))
                print(f"  FAIL  {name}  (not run: {failed!r} failed)")

    def after_teardown(self, left, label="e2e", logs_prefix=""):
        """What is left after teardown fails the run; when anything failed, every component's
        log is kept (the temp dir goes unless something is left in it)."""
        if left:
            self.results.append(("teardown", "FAIL", 0, "left behind: " + "; ".join(left)))
            print("  FAIL  teardown: left behind: " + "; ".join(left))
        if any(r[1] == "FAIL" for r in self.results):
            stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
            keep = cl.REPO / ".cache" / "e2e" / "logs" / f"{logs_prefix}{stamp}"
            shutil.copytree(self.c.logs, keep)
            print(f"{label}: the logs of every component are in {keep}")
        if not left:
            shutil.rmtree(self.c.work, ignore_errors=True)
        else:
            print(f"{label}: {self.c.work} kept: something is still mounted or attached there")

    def summary(self, began, interrupted, label="e2e"):
        """Prints the time and the counts; the exit status."""
        print(f"{label}: took {time.monotonic() - began:.0f} s; the longest waits: " + "; ".join(cl.longest_waits()))
        first = next((r for r in self.results if r[1] == "FAIL"), None)
        if first:
            print(f"{label}: failed at: {first[0]}: {first[3]}")
        counts = {o: sum(1 for r in self.results if r[1] == o) for o in ("PASS", "FAIL", "SKIP")}
        print(f"{label}: {counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
        return 1 if counts["FAIL"] or interrupted else 0

    # ---- what the objects and the host show --------------------------------------------

    def claim_volume(self, claim):
        """The claim's PV, its pool image and (when attached on the node) its loop device."""
        p = self.c.get("pvc", claim, "-n", NS)
        pv = self.c.get("pv", p["spec"]["volumeName"])
        handle = pv["spec"]["csi"]["volumeHandle"]
        return {"pv": pv["metadata"]["name"], "handle": handle, "image": self.c.pool / "volumes" / f"{handle}.img"}

    def attachment(self, pv_name):
        for va in self.c.items("volumeattachments"):
            if va["spec"]["source"].get("persistentVolumeName") == pv_name and va["spec"]["nodeName"] == NODE:
                return va
        return None

    def running_pod(self, name):
        def running():
            p = self.c.get("pod", name, "-n", NS)
            return p and p["status"].get("phase") == "Running" and p
        p = self.c.wait_for(f"pod {name} Running", running, POD)
        self.pods[name] = p["metadata"]["uid"]
        return p

    def bound_claim(self, claim):
        self.c.wait_for(f"claim {claim} Bound", lambda: (self.c.get("pvc", claim, "-n", NS) or {}).get(
            "status", {}).get("phase") == "Bound", RECONCILED)
        p = self.c.get("pvc", claim, "-n", NS)
        # WaitForFirstConsumer: provisioned for the node the scheduler chose
        selected = p["metadata"].get("annotations", {}).get("volume.kubernetes.io/selected-node")
        assert selected == self.node_name, f"claim {claim} selected-node is {selected!r}"
        return self.claim_volume(claim)

    def attached(self, v):
        va = self.c.wait_for(f"VolumeAttachment of {v['pv']} attached",
                             lambda: (a := self.attachment(v["pv"])) and a.get("status", {}).get("attached") and a,
                             RECONCILED)
        return va

    def host_mounts_of(self, v):
        """The loop device of the volume's image and every mount of it under kubelet's root."""
        loop = host.loop_of(v["image"])
        assert loop, f"no loop device is bound to {v['image']}"
        dev = host.loop_dev(loop)
        return loop, [m for m in host.mounts(self.c.kubelet) if m["dev"] == dev]

    def csi_mounts(self):
        """Mounts under kubelet's root that belong to CSI volumes (staging, publish, block maps)."""
        return [m for m in host.mounts(self.c.kubelet)
                if "kubernetes.io~csi" in m["path"] or "/plugins/kubernetes.io/csi/" in m["path"]]

    # ---- the flows -----------------------------------------------------------------------

    def capacity(self):
        def published():
            caps = self.c.items("csistoragecapacities", "-n", NAMESPACE)
            by_class = {cap["storageClassName"]: cap for cap in caps if cap.get("capacity")}
            return {"blockpool-ext4", "blockpool-xfs"} <= by_class.keys() and by_class
        caps = self.c.wait_for("CSIStorageCapacity for both classes", published, RECONCILED)
        pool_fs = host.fs_size(self.c.pool)
        for sc, cap in caps.items():
            size = quantity(cap["capacity"])
            assert 0 < size <= pool_fs, f"{sc}: capacity {cap['capacity']} vs the pool's file system {pool_fs}"
            labels = cap.get("nodeTopology", {}).get("matchLabels", {})
            assert labels.get("topology.blockpool.csi.dev/node") == NODE, f"{sc}: topology {labels}"
            owners = [(o["kind"], o["name"]) for o in cap["metadata"].get("ownerReferences", [])]
            assert owners == [("Deployment", "blockpool-controller")], f"{sc}: owners {owners}"
        self.capacity_bytes = quantity(caps["blockpool-ext4"]["capacity"])
        print(f"        published: {caps['blockpool-ext4']['capacity']} per class; the pool's file system "
              f"holds {pool_fs / GI:.1f} GiB")

    def fs_volume(self, fstype):
        claim, name = f"data-{fstype}", f"app-{fstype}"
        self.c.apply([pvc(claim, f"blockpool-{fstype}", "1Gi"), pod(name, {"persistentVolumeClaim": {
            "claimName": claim}}, fs_group=1000)])
        v = self.bound_claim(claim)
        self.attached(v)
        p = self.running_pod(name)
        assert v["image"].is_file() and v["image"].stat().st_size == GI, f"pool image {v['image']}"
        loop, ms = self.host_mounts_of(v)
        staged = [m for m in ms if m["path"].startswith(str(self.c.kubelet / "plugins/kubernetes.io/csi" / DRIVER_NAME))
                  and m["path"].endswith("/globalmount")]
        publish = self.c.kubelet / "pods" / p["metadata"]["uid"] / "volumes/kubernetes.io~csi" / v["pv"] / "mount"
        published = [m for m in ms if m["path"] == str(publish)]
        assert len(staged) == 1 and staged[0]["fstype"] == fstype, f"staging mounts of {loop}: {ms}"
        assert len(published) == 1 and published[0]["fstype"] == fstype, f"no {fstype} mount at {publish}: {ms}"
        # Kept for the later flows (snapshot, clone, expansion, deletion) before the last check.
        (publish / DATA).write_text(f"written through {name}\n")
        fd = os.open(publish / DATA, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
        v.update(pod=name, loop=loop, publish=publish)
        self.volumes[claim] = v
        # fsGroup (CSIDriver fsGroupPolicy: File): kubelet gave the volume's root to group 1000, setgid
        st = os.stat(publish)
        assert st.st_gid == 1000 and st.st_mode & stat.S_ISGID, \
            f"fsGroup not applied: gid {st.st_gid}, mode {oct(st.st_mode)}"

    def block_volume(self):
        claim, name = "data-block", "app-block"
        self.c.apply([pvc(claim, "blockpool-ext4", "512Mi", block=True),
                      pod(name, {"persistentVolumeClaim": {"claimName": claim}}, block=True)])
        v = self.bound_claim(claim)
        self.attached(v)
        p = self.running_pod(name)
        loop, _ = self.host_mounts_of(v)
        # The driver publishes the device node itself at kubelet's per-pod publish path.
        target = (self.c.kubelet / "plugins/kubernetes.io/csi/volumeDevices/publish" / v["pv"]
                  / p["metadata"]["uid"])
        st = os.stat(target)
        assert stat.S_ISBLK(st.st_mode), f"{target} is not a block device"
        assert f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}" == host.loop_dev(loop), \
            f"{target} is not {loop}, the loop device of {v['image']}"
        assert not any(m["fstype"] in ("ext4", "xfs") for m in host.mounts(self.c.kubelet)
                       if m["dev"] == host.loop_dev(loop)), "a raw block volume got a file system mounted"
        # Bytes written to the pod's device land in the pool image.
        tag = b"blockpool-e2e raw block\n"
        fd = os.open(target, os.O_WRONLY)
        os.write(fd, tag)
        os.fsync(fd)
        os.close(fd)
        with open(v["image"], "rb") as f:
            assert f.read(len(tag)) == tag, "the bytes written to the device are not in the pool image"
        v.update(pod=name, loop=loop, publish=target)
        self.volumes[claim] = v

    def snapshot(self):
        # The base on a cluster with the VolumeSnapshot CRDs only: the snapshot, the restore and
        # the clone come before the group snapshots are opted in to.
        assert not self.c.has_group_snapshot_crds(), "the group snapshot CRDs are installed already"
        self.c.apply({"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
                      "metadata": {"name": "snap-ext4", "namespace": NS},
                      "spec": {"volumeSnapshotClassName": "blockpool-snapshots",
                               "source": {"persistentVolumeClaimName": "data-ext4"}}})
        snap = self.c.wait_for("VolumeSnapshot readyToUse",
                               lambda: (s := self.c.get("volumesnapshot", "snap-ext4", "-n", NS))
                               and s.get("status", {}).get("readyToUse") and s, RECONCILED)
        content = self.c.get("volumesnapshotcontent", snap["status"]["boundVolumeSnapshotContentName"])
        handle = content["status"]["snapshotHandle"]
        assert (self.c.pool / "snapshots" / f"{handle}.img").is_file(), f"no pool snapshot {handle}"
        self.snapshot_handle = handle

    def from_source(self, claim, source):
        name = f"app-{claim}"
        kind = "volumesnapshot" if source["kind"] == "VolumeSnapshot" else "pvc"
        # Every version of the source while the new volume is made: csi-provisioner protects
        # it with a finalizer meanwhile (and without the RBAC for it, goes on silently).
        versions_of_source = self.c.watch(kind, source["name"], "-n", NS)
        self.c.apply([pvc(claim, "blockpool-ext4", "1Gi", source=source),
                      pod(name, {"persistentVolumeClaim": {"claimName": claim}})])
        v = self.bound_claim(claim)
        finalizer = {"volumesnapshot": "provisioner.storage.kubernetes.io/volumesnapshot-as-source-protection",
                     "pvc": "provisioner.storage.kubernetes.io/cloning-protection"}[kind]
        seen = versions_of_source()
        assert any(finalizer in o["metadata"].get("finalizers", []) for o in seen), \
            f"the source {source['name']} never had csi-provisioner's {finalizer} ({len(seen)} versions seen)"
        self.attached(v)
        p = self.running_pod(name)
        publish = self.c.kubelet / "pods" / p["metadata"]["uid"] / "volumes/kubernetes.io~csi" / v["pv"] / "mount"
        loop, ms = self.host_mounts_of(v)
        assert any(m["path"] == str(publish) for m in ms), f"not published at {publish}: {ms}"
        assert (publish / DATA).read_text() == "written through app-ext4\n", "the source's data is not in the volume"
        assert v["image"] != self.volumes["data-ext4"]["image"]
        v.update(pod=name, loop=loop, publish=publish)
        self.volumes[claim] = v

    def restore(self):
        self.from_source("restored", {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot",
                                      "name": "snap-ext4"})

    def clone(self):
        self.from_source("cloned", {"kind": "PersistentVolumeClaim", "name": "data-ext4"})

    def oversized(self):
        before = host.pool_records(self.c.pool)
        too_big = f"{self.capacity_bytes // GI * 2 + 1}Gi"
        self.c.apply([pvc("too-big", "blockpool-ext4", too_big),
                      pod("app-too-big", {"persistentVolumeClaim": {"claimName": "too-big"}})])

        def not_scheduled():
            events = self.c.items("events", "-n", NS, "--field-selector",
                                "involvedObject.name=app-too-big,reason=FailedScheduling")
            return [e["message"] for e in events if "did not have enough free storage" in e["message"]]
        msgs = self.c.wait_for("FailedScheduling for lack of storage capacity", not_scheduled, SCHEDULER)
        p = self.c.get("pod", "app-too-big", "-n", NS)
        assert not p["spec"].get("nodeName"), "the oversized claim's pod was scheduled"
        assert self.c.get("pvc", "too-big", "-n", NS)["status"]["phase"] == "Pending"
        assert host.pool_records(self.c.pool) == before, "the pool changed for a claim that does not fit"
        print(f"        {too_big}: {msgs[0]}")
        self.c.kubectl("delete", "pod/app-too-big", "pvc/too-big", "-n", NS, "--wait=true", f"--timeout={RECONCILED}s")

    def expand_controller(self, claim):
        v = self.volumes[claim]
        self.c.kubectl("patch", "pvc", claim, "-n", NS, "--type=merge",
                       "-p", json.dumps({"spec": {"resources": {"requests": {"storage": "2Gi"}}}}))
        # csi-resizer -> ControllerExpandVolume: the PV and the pool image grow
        self.c.wait_for("PV capacity 2Gi", lambda: self.c.get("pv", v["pv"])["spec"]["capacity"]["storage"] == "2Gi",
                        RECONCILED)
        assert v["image"].stat().st_size == 2 * GI, f"image is {v['image'].stat().st_size} bytes"

    def expand_node(self, claim, fstype):
        v = self.volumes[claim]
        if fstype == "ext4" and not host.has_capability(host.CAP_SYS_RESOURCE):
            self.expand_at_next_stage(claim, v)
            return
        # kubelet calls NodeExpandVolume on the mounted volume: online, the pod keeps running
        self.c.wait_for("claim capacity 2Gi", lambda: self.c.get("pvc", claim, "-n", NS)["status"].get(
            "capacity", {}).get("storage") == "2Gi", RECONCILED)
        size = self.c.wait_for("file system grown", lambda: (s := host.fs_size(v["publish"])) > 1.5 * GI and s, ON_HOST)
        assert self.c.get("pod", v["pod"], "-n", NS)["status"]["phase"] == "Running"
        print(f"        online: {claim}'s file system is now {size / GI:.2f} GiB with {v['pod']} running")

    def expand_at_next_stage(self, claim, v):
        """The kernel grows a mounted ext4 only for CAP_SYS_RESOURCE, which this machine withholds
        from root: the driver answers kubelet's NodeExpandVolume FAILED_PRECONDITION, the claim
        keeps its size, and the volume's next stage grows the file system before mounting it."""
        def refused():
            return [line for line in (self.c.logs / "driver-node.log").read_text().splitlines()
                    if "NodeExpandVolume" in line and v["handle"] in line and "FAILED_PRECONDITION" in line
                    and "next NodeStageVolume" in line]
        self.c.wait_for("NodeExpandVolume answered FAILED_PRECONDITION: grows at the next stage", refused, RECONCILED)
        status = self.c.get("pvc", claim, "-n", NS)["status"]
        assert status["capacity"]["storage"] == "1Gi", f"claim capacity {status['capacity']} before the growth"
        conditions = [c["type"] for c in status.get("conditions", [])]
        assert "FileSystemResizePending" in conditions, f"claim conditions {conditions}"
        assert host.fs_size(v["publish"]) < 1.5 * GI, "the mounted ext4 grew without CAP_SYS_RESOURCE"
        # The pod goes, and the volume is unpublished and unstaged; a new pod stages it again.
        self.c.kubectl("delete", "pod", v["pod"], "-n", NS, "--wait=true", f"--timeout={RECONCILED}s")
        self.c.wait_for(f"{claim} unstaged (loop device released)", lambda: not host.loop_of(v["image"]), ON_HOST)
        self.c.apply(pod(v["pod"], {"persistentVolumeClaim": {"claimName": claim}}, fs_group=1000))
        p = self.running_pod(v["pod"])
        publish = self.c.kubelet / "pods" / p["metadata"]["uid"] / "volumes/kubernetes.io~csi" / v["pv"] / "mount"
        loop, _ = self.host_mounts_of(v)
        v.update(loop=loop, publish=publish)
        # kubelet's NodeExpandVolume after the stage finds the file system grown and finishes the resize.
        self.c.wait_for("claim capacity 2Gi", lambda: self.c.get("pvc", claim, "-n", NS)["status"].get(
            "capacity", {}).get("storage") == "2Gi", RECONCILED)
        size = host.fs_size(publish)
        assert size > 1.5 * GI, f"{claim}'s file system is {size} bytes after its stage"
        assert (publish / DATA).read_text() == f"written through {v['pod']}\n", "the data went with the growth"
        print(f"        at the next stage: {claim}'s file system is now {size / GI:.2f} GiB, "
              f"with {v['pod']} running again")

    def ephemeral(self):
        before = set(host.pool_records(self.c.pool)["volumes"])
        self.c.apply(pod("app-inline", {"csi": {"driver": DRIVER_NAME,
                                                "volumeAttributes": {"size": "256Mi", "fsType": "ext4"}}}))
        p = self.running_pod("app-inline")
        new = set(host.pool_records(self.c.pool)["volumes"]) - before
        assert len(new) == 1, f"new pool volumes: {new}"
        vid = new.pop()
        image = self.c.pool / "volumes" / f"{vid}.img"
        publish = self.c.kubelet / "pods" / p["metadata"]["uid"] / "volumes/kubernetes.io~csi/data/mount"
        loop = host.loop_of(image)
        assert loop and any(m["path"] == str(publish) and m["fstype"] == "ext4" for m in host.mounts(self.c.kubelet)
                            if m["dev"] == host.loop_dev(loop)), f"no ext4 mount of {image} at {publish}"
        # podInfoOnMount: kubelet marks the inline volume (csi.storage.k8s.io/ephemeral) in the
        # volume_context only when the CSIDriver asks for pod info; the driver records it.
        record = json.loads((self.c.pool / "volumes" / f"{vid}.json").read_text())
        assert "csi.storage.k8s.io/ephemeral" in json.dumps(record), f"no ephemeral marker in {record}"
        self.c.kubectl("delete", "pod", "app-inline", "-n", NS, "--wait=true", f"--timeout={RECONCILED}s")
        self.c.wait_for("the inline volume deleted with its pod",
                        lambda: not image.exists() and not host.loop_of(image), ON_HOST)
        assert not any(m["path"] == str(publish) for m in host.mounts(self.c.kubelet)), "still mounted"

    def group_snapshot(self):
        """examples/group-snapshot.yaml as it is, over data-ext4 and data-xfs labelled as it selects:
        one CreateVolumeGroupSnapshot, a member restored, the group deleted with its members."""
        self.c.kubectl("label", "pvc", "data-ext4", "data-xfs", "-n", NS, "blockpool.csi.dev/group=demo")
        self.c.kubectl("apply", "-n", NS, "-f", cl.REPO / "sidecars-deploy/examples/group-snapshot.yaml")
        group = self.c.wait_for("VolumeGroupSnapshot readyToUse", lambda: (
            g := self.c.get("volumegroupsnapshot", "blockpool-demo-group", "-n", NS))
            and g.get("status", {}).get("readyToUse") and g, RECONCILED)
        content = self.c.get("volumegroupsnapshotcontent", group["status"]["boundVolumeGroupSnapshotContentName"])
        group_handle = content["status"]["volumeGroupSnapshotHandle"]
        infos = content["status"].get("volumeSnapshotInfoList") or []
        members = {i["volumeHandle"]: i["snapshotHandle"] for i in infos}
        sources = {self.volumes[c]["handle"]: c for c in ("data-ext4", "data-xfs")}
        assert members.keys() == sources.keys(), f"members of {group_handle}: {infos}, claims' volumes: {sources}"
        # One VolumeSnapshotContent (and VolumeSnapshot) per member, each a snapshot in the pool.
        contents = {vsc["status"]["snapshotHandle"]: vsc for vsc in self.c.items("volumesnapshotcontents")
                    if vsc.get("status", {}).get("volumeGroupSnapshotHandle") == group_handle}
        assert contents.keys() == set(members.values()), f"member contents {list(contents)} vs {members}"
        for handle in members.values():
            assert (self.c.pool / "snapshots" / f"{handle}.img").is_file(), f"no pool snapshot {handle}"
        assert host.pool_records(self.c.pool)["groups"] == [group_handle], \
            f"the pool's group records: {host.pool_records(self.c.pool)['groups']}, the group: {group_handle}"
        snaps = {vsc["status"]["snapshotHandle"]: vsc["spec"]["volumeSnapshotRef"]["name"] for vsc in contents.values()}
        for name in snaps.values():
            self.c.wait_for(f"member VolumeSnapshot {name} readyToUse", lambda name=name: (self.c.get(
                "volumesnapshot", name, "-n", NS) or {}).get("status", {}).get("readyToUse"), RECONCILED)
        print(f"        {group_handle}: {len(members)} members, "
              + ", ".join(f"{sources[v]} -> {snaps[h]}" for v, h in members.items()))

        # The ext4 member restored like any snapshot: the data written through app-ext4 is there.
        member = snaps[members[self.volumes["data-ext4"]["handle"]]]
        claim, name = "group-restored", "app-group-restored"
        self.c.apply([pvc(claim, "blockpool-ext4", "1Gi", source={
            "apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": member}),
            pod(name, {"persistentVolumeClaim": {"claimName": claim}})])
        v = self.bound_claim(claim)
        self.attached(v)
        p = self.running_pod(name)
        publish = self.c.kubelet / "pods" / p["metadata"]["uid"] / "volumes/kubernetes.io~csi" / v["pv"] / "mount"
        loop, ms = self.host_mounts_of(v)
        assert any(m["path"] == str(publish) for m in ms), f"not published at {publish}: {ms}"
        assert (publish / DATA).read_text() == "written through app-ext4\n", "the member's data is not in the volume"
        v.update(pod=name, loop=loop, publish=publish)
        self.volumes[claim] = v

        # deletionPolicy Delete: the group, its members' objects and their pool snapshots go.
        self.c.kubectl("delete", "volumegroupsnapshot", "blockpool-demo-group", "-n", NS, "--wait=true",
                       f"--timeout={RECONCILED}s")
        self.c.wait_for("the group's VolumeGroupSnapshotContent deleted",
                        lambda: not self.c.items("volumegroupsnapshotcontents"), RECONCILED)
        self.c.wait_for("the members' VolumeSnapshots and contents deleted", lambda: not any(
            vsc.get("status", {}).get("volumeGroupSnapshotHandle") == group_handle
            for vsc in self.c.items("volumesnapshotcontents")) and not any(
            self.c.get("volumesnapshot", n, "-n", NS) for n in snaps.values()), RECONCILED)
        self.c.wait_for("the members' snapshots gone from the pool", lambda: not any(
            (self.c.pool / "snapshots" / f"{h}.img").exists() for h in members.values()), ON_HOST)
        assert not host.pool_records(self.c.pool)["groups"], f"group records left: {host.pool_records(self.c.pool)}"
        assert self.c.get("volumesnapshot", "snap-ext4", "-n", NS), "the ordinary snapshot went with the group"

    def modify(self):
        """examples/volumeattributesclass.yaml set on the sparse raw block claim: csi-resizer calls
        ControllerModifyVolume, which reserves every block of the pool image."""
        v = self.volumes["data-block"]
        size = v["image"].stat().st_size
        before = v["image"].stat().st_blocks * 512
        assert before < size, f"{v['image']} is not sparse: {before} of {size} bytes allocated"
        self.c.kubectl("apply", "-f", cl.REPO / "sidecars-deploy/examples/volumeattributesclass.yaml")
        self.c.kubectl("patch", "pvc", "data-block", "-n", NS, "--type=merge",
                       "-p", json.dumps({"spec": {"volumeAttributesClassName": "blockpool-preallocated"}}))
        self.c.wait_for("claim status.currentVolumeAttributesClassName blockpool-preallocated", lambda: (
            self.c.get("pvc", "data-block", "-n", NS)["status"].get("currentVolumeAttributesClassName")
            == "blockpool-preallocated"), RECONCILED)
        status = self.c.get("pvc", "data-block", "-n", NS)["status"]
        assert not status.get("modifyVolumeStatus"), f"modification still pending: {status['modifyVolumeStatus']}"
        pv = self.c.get("pv", v["pv"])
        assert pv["spec"].get("volumeAttributesClassName") == "blockpool-preallocated", \
            f"PV class {pv['spec'].get('volumeAttributesClassName')!r}"
        after = v["image"].stat().st_blocks * 512
        assert after >= size, f"{v['image']}: {after} of {size} bytes allocated after ControllerModifyVolume"
        with open(v["image"], "rb") as f:
            assert f.read(24) == b"blockpool-e2e raw block\n", "the data went with the modification"
        assert self.c.get("pod", v["pod"], "-n", NS)["status"]["phase"] == "Running"
        print(f"        {v['image'].name}: {before / (1 << 20):.1f} MiB allocated before, "
              f"{after / (1 << 20):.1f} MiB after, of {size / (1 << 20):.0f} MiB")

    def flexvolume(self):
        """A blockpool volume made by a claim, kept (Retain) when the claim goes, then mounted by
        the real kubelet through blockpool's FlexVolume driver (docs/flexvolume.md)."""
        ext4 = self.c.get("storageclass", "blockpool-ext4")
        try:
            # A class like blockpool-ext4 but binding at once: no pod consumes the claim.
            self.c.apply([{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                           "metadata": {"name": "blockpool-e2e-immediate"}, "provisioner": DRIVER_NAME,
                           "parameters": ext4.get("parameters", {}), "reclaimPolicy": "Delete",
                           "volumeBindingMode": "Immediate"},
                          pvc("flex-source", "blockpool-e2e-immediate", "1Gi")])
            self.c.wait_for("claim flex-source Bound", lambda: (self.c.get("pvc", "flex-source", "-n", NS) or {}).get(
                "status", {}).get("phase") == "Bound", RECONCILED)
            source = self.claim_volume("flex-source")
            vid, image = source["handle"], source["image"]
            self.flex_source_pv = source["pv"]
            # docs/flexvolume.md: Retain on the PV, then the claim goes and the volume stays.
            self.c.kubectl("patch", "pv", source["pv"], "--type=merge",
                           "-p", json.dumps({"spec": {"persistentVolumeReclaimPolicy": "Retain"}}))
            self.c.kubectl("delete", "pvc", "flex-source", "-n", NS, "--wait=true", f"--timeout={RECONCILED}s")
            self.c.wait_for(f"{source['pv']} Released",
                            lambda: self.c.get("pv", source["pv"])["status"]["phase"] == "Released", RECONCILED)
            assert image.is_file() and not host.loop_of(image), f"{image}: not kept, or attached"

            self.c.apply([{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "flex-data"},
                           "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                    "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                                    "flexVolume": {"driver": "blockpool.csi.dev/blockpool", "fsType": "ext4",
                                                   "options": {"volumeID": vid}}}},
                          {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                           "metadata": {"name": "flex-data", "namespace": NS},
                           "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "", "volumeName": "flex-data",
                                    "resources": {"requests": {"storage": "1Gi"}}}},
                          pod("app-flex", {"persistentVolumeClaim": {"claimName": "flex-data"}})])
            p = self.running_pod("app-flex")
            loop = host.loop_of(image)
            assert loop, f"no loop device is bound to {image}"
            ms = [m for m in host.mounts(self.c.kubelet) if m["dev"] == host.loop_dev(loop)]
            publish = self.c.kubelet / "pods" / p["metadata"]["uid"] / "volumes/blockpool.csi.dev~blockpool/flex-data"
            staging = self.c.kubelet / "plugins" / DRIVER_NAME / "flexvolume/staging" / vid
            assert sorted(m["path"] for m in ms) == sorted([str(publish), str(staging)]) and all(
                m["fstype"] == "ext4" for m in ms), f"mounts of {loop} ({image}): {ms}"
            assert not self.attachment("flex-data"), "a VolumeAttachment for a FlexVolume PV that does not attach"
            (publish / DATA).write_text("written through app-flex\n")
            fd = os.open(publish / DATA, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)

            # The pod goes: kubelet's unmount unpublishes and unstages; the volume stays in the pool.
            self.c.kubectl("delete", "pod", "app-flex", "-n", NS, "--wait=true", f"--timeout={RECONCILED}s")
            self.c.wait_for("the FlexVolume unmounted", lambda: not any(
                m["path"] in (str(publish), str(staging)) for m in host.mounts(self.c.kubelet)), ON_HOST)
            self.c.wait_for(f"{vid}: loop device released", lambda: not host.loop_of(image), ON_HOST)
            # The FlexVolume driver removes its staging directory after the unstage has answered.
            self.c.wait_for(f"{staging} removed", lambda: not staging.exists(), ON_HOST)
            assert image.is_file(), f"{image} went with the FlexVolume pod"
            print(f"        {vid} mounted at {publish.relative_to(self.c.kubelet)} through {loop}; unmounted")
        finally:
            # The claim, then the Retain PVs: the FlexVolume PV holds nothing of the pool; the CSI PV
            # set back to Delete takes its volume with it.
            self.c.kubectl("delete", "pod", "app-flex", "-n", NS, "--ignore-not-found", "--wait=true",
                           f"--timeout={RECONCILED}s", check=False)
            self.c.kubectl("delete", "pvc", "flex-data", "flex-source", "-n", NS, "--ignore-not-found",
                           "--wait=true", f"--timeout={RECONCILED}s", check=False)
            self.c.kubectl("delete", "pv", "flex-data", "--ignore-not-found", "--wait=true", f"--timeout={RECONCILED}s",
                           check=False)
            if getattr(self, "flex_source_pv", None):
                self.c.kubectl("patch", "pv", self.flex_source_pv, "--type=merge", "-p", json.dumps(
                    {"spec": {"persistentVolumeReclaimPolicy": "Delete"}}), check=False)
            self.c.kubectl("delete", "storageclass", "blockpool-e2e-immediate", "--ignore-not-found", check=False)
        self.c.wait_for(f"{self.flex_source_pv} deleted with its volume",
                        lambda: not self.c.get("pv", self.flex_source_pv) and not image.exists(), RECONCILED)

    def delete_pods(self):
        # Every pod, also those of a flow that failed half way, so the checks below and the
        # deletion of the claims after them see what a clean run leaves.
        self.c.kubectl("delete", "pod", "--all", "-n", NS, "--wait=false")
        self.c.wait_for("every pod gone", lambda: not self.c.items("pods", "-n", NS), POD)
        for claim, v in self.volumes.items():
            self.c.wait_for(f"{v['pv']} detached (VolumeAttachment gone)", lambda v=v: not self.attachment(v["pv"]),
                            RECONCILED)
            self.c.wait_for(f"{claim}: loop device released", lambda v=v: not host.loop_of(v["image"]), ON_HOST)
            dev = host.loop_dev(v["loop"]) if (Path("/sys/block") / v["loop"]).exists() else None
            assert not any(m["path"] == str(v["publish"]) or (dev and m["dev"] == dev)
                           for m in host.mounts(self.c.kubelet)), f"{claim} still mounted"
            assert v["image"].is_file(), f"{claim}'s image went with its pod"
        assert not self.csi_mounts(), f"CSI mounts left: {self.csi_mounts()}"

    def delete_everything(self):
        groups = self.c.has_group_snapshot_crds()  # not when the flow that installs them failed first
        if groups:
            self.c.kubectl("delete", "volumegroupsnapshot", "--all", "-n", NS, "--wait=true",
                           f"--timeout={RECONCILED}s")
        self.c.kubectl("delete", "volumesnapshot", "--all", "-n", NS, "--wait=true", f"--timeout={RECONCILED}s")
        self.c.kubectl("delete", "pvc", "--all", "-n", NS, "--wait=true", f"--timeout={RECONCILED}s")

        def pvs_left():
            return [pv["metadata"]["name"] for pv in self.c.items("pv")]
        self.c.wait_for("every PV deleted", lambda: not pvs_left(), RECONCILED)
        self.c.wait_for("every VolumeSnapshotContent deleted", lambda: not self.c.items("volumesnapshotcontents"),
                        RECONCILED)
        if groups:
            self.c.wait_for("every VolumeGroupSnapshotContent deleted",
                            lambda: not self.c.items("volumegroupsnapshotcontents"), RECONCILED)
        records = host.pool_records(self.c.pool)
        assert records == {"volumes": [], "snapshots": [], "groups": []}, f"left in the pool: {records}"
        assert not self.csi_mounts(), f"CSI mounts left: {self.csi_mounts()}"
        assert not host.loops(self.c.work), f"loop devices left: {host.loops(self.c.work)}"

    def metrics(self):
        """Each driver's --http-endpoint, as a Prometheus pointed at the pods would scrape it: the
        text passes promtool, the call histogram holds what the sidecars and kubelet called, the
        controller shows the pool's gauges and the node its own."""
        tools = subprocess.run([cl.REPO / "sanity-tests" / "install-tools.sh"], check=True,
                               capture_output=True, text=True).stdout.strip()
        scraped = {}
        for where, port in (("controller", self.c.ports["blockpool"]), ("node", self.c.node_ports["blockpool"])):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
                text = r.read().decode()
            check = subprocess.run([Path(tools) / "promtool", "check", "metrics"], check=False, input=text,
                                   capture_output=True, text=True)
            assert check.returncode == 0, f"promtool check metrics, {where}: {check.stdout}{check.stderr}"
            scraped[where] = text

        def calls(text, method):
            return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                       if line.startswith("csi_plugin_operations_seconds_count{")
                       and f'method_name="/csi.v1.{method}"' in line and 'grpc_status_code="OK"' in line
                       and f'driver_name="{DRIVER_NAME}"' in line)
        for where, method in (("controller", "Controller/CreateVolume"),
                              ("controller", "Controller/ControllerPublishVolume"),
                              ("node", "Node/NodeStageVolume"), ("node", "Node/NodePublishVolume")):
            assert calls(scraped[where], method) >= 1, f"the {where}'s histogram has no OK {method}"
        for where, gauge in (("controller", "blockpool_pool_volumes "), ("controller", "blockpool_pool_size_bytes "),
                             ("node", "blockpool_node_staged_volumes "), ("node", "blockpool_node_loop_devices ")):
            assert any(line.startswith(gauge) for line in scraped[where].splitlines()), \
                f"the {where} shows no {gauge.strip()}"
        assert "blockpool_pool_volumes" not in scraped["node"], "the node plugin shows the pool's gauges"

    def no_rbac_denials(self):
        denied = []
        for name in self.c.sidecars:
            for line in (self.c.logs / f"{name}.log").read_text(errors="replace").splitlines():
                if "forbidden" in line.lower():
                    denied.append(f"{name}: {line.strip()[:300]}")
        assert not denied, "RBAC denials:\n" + "\n".join(denied[:10])
        self.c.check_alive()


def node_local_phase(t):
    """The base's layout on a cluster of its own: two nodes, a pool on each. Returns whether it
    was interrupted."""
    work = Path(tempfile.mkdtemp(prefix="blockpool-e2e-local."))
    c = cl.Cluster(work)
    nl = NodeLocal(c)
    print(f"e2e: node-local pools on two nodes, in {work}", flush=True)
    interrupted = False
    try:
        setup = [("two nodes: control plane, apply -k base, hollow kubelets, each node's plugin and sidecars",
                  lambda: (c.start_control_plane(feature_gates=["MutablePVNodeAffinity=true"]), nl.deploy()))]
        flows = [("node-local: CSIStorageCapacity of each node, owned by the DaemonSet", nl.capacity),
                 ("node-local: a WaitForFirstConsumer claim lands in its pod's node's pool only",
                  nl.lands_on_its_pods_node),
                 ("node-local: a claim that fits only node b's pool is scheduled to node b", nl.fits_only_node_b),
                 ("node-local: a claim beyond every pool's remaining promise stays Pending, saying why",
                  nl.fits_no_nodes_remaining_promise),
                 ("node-local: snapshot, restore and clone on the source's node, data read back",
                  nl.snapshot_restore_clone),
                 ("node-local: a snapshot of node a restored in a pod on node b, through the peer channel",
                  nl.restores_on_another_node),
                 ("node-local: a client without the cluster CA's certificate gets nothing from a peer channel",
                  nl.peers_refuse_strangers),
                 ("node-local: raw block claim", nl.raw_block),
                 ("node-local: expansion grows the image and device on its node (NodeExpandVolume)", nl.expansion),
                 ("node-local: a VolumeAttributesClass applied to node b's claim, whichever resizer leads",
                  nl.modifies_on_its_node),
                 ("node-local: a claim deleted while its volume is staged: DeleteVolume refused until unstaged",
                  nl.deleted_while_staged),
                 ("node-local: everything deleted: empty pools, no mount, no loop device", nl.cleanup),
                 ("node-local: kubectl blockpool move takes a writing StatefulSet's volume to node b, a driver "
                  + "killed mid-copy", nl.moves_a_statefulset),
                 ("node-local: kubectl blockpool move --all-from node b takes every volume back to node a",
                  nl.moves_every_volume_off_a_node),
                 ("node-local: no RBAC denial in the per-node sidecars' logs; every process alive",
                  nl.no_rbac_denials)]
        t.run(setup + flows)
    except (KeyboardInterrupt, SystemExit):
        interrupted = True
        t.results.append(("interrupted", "FAIL", 0, "interrupted"))
    finally:
        left = c.teardown()
        if left:
            t.results.append(("node-local teardown", "FAIL", 0, "left behind: " + "; ".join(left)))
        if any(r[1] == "FAIL" for r in t.results):
            keep = cl.REPO / ".cache" / "e2e" / "logs" / ("local-" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
            shutil.copytree(c.logs, keep)
            print(f"e2e: the node-local logs are in {keep}")
        if not left:
            shutil.rmtree(work, ignore_errors=True)
    return interrupted


def main():
    # SIGTERM (a CI timeout) tears down like a failure does.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    began = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="blockpool-e2e."))
    c = cl.Cluster(work)
    t = E2E(c)
    chart = helm.Helm(c)
    print(f"e2e: working in {work}", flush=True)
    interrupted = False
    try:
        setup = [("control plane: etcd, kube-apiserver, controller-manager, scheduler, snapshot-controller",
                  c.start_control_plane),
                 ("helm: install of the chart with overlays/shared-pool's values, its objects read back, uninstalled",
                  chart.install_and_uninstall),
                 ("manifests: apply -k overlays/shared-pool; server-side dry run of the other variants and examples",
                  c.apply_manifests),
                 ("node: hollow kubelet, driver (node mode), registrar; CSINode registered", c.start_node),
                 ("controller: driver and sidecars under the ServiceAccount's token, each leading",
                  c.start_controller)]
        flows = [("helm: the chart made the objects apply -k of overlays/shared-pool made", chart.same_as_applied),
                 ("CSIStorageCapacity published", t.capacity),
                 ("ext4: claim provisioned (WaitForFirstConsumer), attached, staged, published, fsGroup",
                  t.fs_volume, "ext4"),
                 ("xfs: claim provisioned (WaitForFirstConsumer), attached, staged, published, fsGroup",
                  t.fs_volume, "xfs"),
                 ("raw block claim in a pod", t.block_volume),
                 ("snapshot ready: the base's csi-snapshotter, no group snapshot CRDs", t.snapshot),
                 ("restore from the snapshot", t.restore),
                 ("clone of a claim", t.clone),
                 ("changed block tracking opted in: CRD, TLS, apply -k overlays/snapshot-metadata, its sidecar",
                  cbt.enable, c),
                 ("changed block tracking, block claim: snapshot-metadata-lister and -verifier", cbt.block, t, pvc),
                 ("changed block tracking, file system claim: snapshot-metadata-lister", cbt.filesystem, t),
                 ("group snapshots opted in: CRDs, snapshot-controller's gate, apply -k overlays/group-snapshots",
                  c.enable_group_snapshots),
                 ("group snapshot of two labelled claims ready; a member restored; deleted with its members",
                  t.group_snapshot),
                 ("oversized claim not scheduled for lack of capacity", t.oversized),
                 ("expansion ext4: controller (ControllerExpandVolume)", t.expand_controller, "data-ext4"),
                 ("expansion ext4: node, online or at the next stage (NodeExpandVolume)", t.expand_node,
                  "data-ext4", "ext4"),
                 ("expansion xfs: controller (ControllerExpandVolume)", t.expand_controller, "data-xfs"),
                 ("expansion xfs: node, online (NodeExpandVolume)", t.expand_node, "data-xfs", "xfs"),
                 ("inline ephemeral volume (podInfoOnMount)", t.ephemeral),
                 ("VolumeAttributesClass on a claim: ControllerModifyVolume preallocates its image", t.modify),
                 ("FlexVolume PV mounted through the kubelet's FlexVolume plugin, then unmounted", t.flexvolume),
                 ("metrics: each driver's /metrics passes promtool and counts the calls made", t.metrics),
                 ("pod deletion unpublishes, unstages, detaches", t.delete_pods),
                 ("everything deleted: empty pool, no mount, no loop device", t.delete_everything),
                 ("no RBAC denial in the sidecars' logs; every process alive", t.no_rbac_denials)]
        t.run(setup + flows)
    except (KeyboardInterrupt, SystemExit):
        interrupted = True
        t.results.append(("interrupted", "FAIL", 0, "interrupted"))
    finally:
        t.after_teardown(c.teardown())
    # The second cluster only when the first passed: a run ends at its first failure.
    if not interrupted and not any(r[1] == "FAIL" for r in t.results):
        interrupted = node_local_phase(t)
    return t.summary(began, interrupted)


if __name__ == "__main__":
    sys.exit(main())
