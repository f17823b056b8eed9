"""The real node's I/O limits flow (e2e/README.md, "The real node"): a pod's direct I/O on its claim
measured without a limit, under a VolumeAttributesClass's limits (the real csi-resizer calls
ControllerModifyVolume), after a change to another class, and in a pod started later; then a raw
block claim made with a class (csi-provisioner passes it to CreateVolume). Each figure
under a limit is checked to be within TOLERANCE of it; the figures are printed, for
docs/performance-node.md."""

import json
import re
from pathlib import Path

import host
from cluster import ON_HOST, RECONCILED, pvc, wait_for

CLAIM = "rn-io"
POD = "rn-io"
LATER_POD = "rn-io-later"
BLOCK_CLAIM = "rn-io-block"
# Each measured run lasts about this long at the limit, so the throttle's first slice weighs little.
SECONDS_AT_LIMIT = 5
TOLERANCE = 0.10
MIB = 1 << 20
# Two classes: (read IOPS, write IOPS, read bytes/s, write bytes/s). The bytes are measured with 1 MiB
# requests (a few IOPS, well under the IOPS limit), the IOPS with 4 KiB ones (well under the bytes).
CLASSES = {"blockpool-e2e-io-a": (200, 200, 20 * MIB, 20 * MIB),
           "blockpool-e2e-io-b": (100, 100, 10 * MIB, 10 * MIB)}
CGROUP_V1_BLKIO = Path("/sys/fs/cgroup/blkio")
# The image's busybox dd says only "100+0 records out"; its time -p says "real 5.01".
RECORDS_OUT = re.compile(r"^(\d+)\+0 records out$", re.MULTILINE)
REAL = re.compile(r"^real ([0-9.]+)$", re.MULTILINE)
BLOCK = {"bs=1M": MIB, "bs=4k": 4096}


def vac(name, limits):
    r_iops, w_iops, r_bps, w_bps = limits
    return {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttributesClass", "metadata": {"name": name},
            "driverName": "blockpool.csi.dev",
            "parameters": {"readIOPS": str(r_iops), "writeIOPS": str(w_iops),
                           "readBytesPerSecond": f"{r_bps // MIB}Mi", "writeBytesPerSecond": f"{w_bps // MIB}Mi"}}


class IoLimitsFlow:
    """Runs inside RealNodeFlows (real_node.py): `t` gives the cluster, the node and the pod helpers."""

    def __init__(self, t):
        self.t = t
        self.c = t.c
        self.figures = {}

    def dd(self, pod, *args):
        """(bytes, seconds) of one dd in the pod: whole blocks copied, and the time busybox's time -p
        took of it (to 10 ms, a fifth of a percent of a run at the limit)."""
        out = self.c.kubectl("exec", "-n", "default", pod, "--", "sh", "-c", "time -p dd " + " ".join(args) + " 2>&1")
        records, real = RECORDS_OUT.search(out), REAL.search(out)
        assert records and real, f"dd {' '.join(args)} in {pod}: {out.strip()!r}"
        block = next(BLOCK[a] for a in args if a in BLOCK)
        return int(records.group(1)) * block, float(real.group(1))

    def measure(self, pod, label, limits, path="/data/io"):
        """Direct I/O in the pod on `path` (a file, or the raw block device): bytes per second with
        1 MiB requests, IOPS with 4 KiB ones, each way. The amounts last SECONDS_AT_LIMIT at `limits`
        (class a's when there is none)."""
        r_iops, w_iops, r_bps, w_bps = limits or CLASSES["blockpool-e2e-io-a"]
        wrote, s = self.dd(pod, "if=/dev/zero", f"of={path}", "bs=1M", f"count={w_bps * SECONDS_AT_LIMIT // MIB}",
                           "oflag=direct")
        write_bps = wrote / s
        read, s = self.dd(pod, f"if={path}", "of=/dev/null", "bs=1M", f"count={r_bps * SECONDS_AT_LIMIT // MIB}",
                          "iflag=direct")
        read_bps = read / s
        wrote, s = self.dd(pod, "if=/dev/zero", f"of={path}", "bs=4k", f"count={w_iops * SECONDS_AT_LIMIT}",
                           "oflag=direct", "conv=notrunc")
        write_iops = wrote / 4096 / s
        read, s = self.dd(pod, f"if={path}", "of=/dev/null", "bs=4k", f"count={r_iops * SECONDS_AT_LIMIT}",
                          "iflag=direct")
        read_iops = read / 4096 / s
        measured = (read_iops, write_iops, read_bps, write_bps)
        self.figures[label] = {"limits": limits, "measured": measured}
        print(f"        {label}: read {read_iops:.0f} IOPS, {read_bps / MIB:.1f} MiB/s; "
              f"write {write_iops:.0f} IOPS, {write_bps / MIB:.1f} MiB/s"
              + (f" (limits {limits[0]}/{limits[1]} IOPS, {limits[2] // MIB}/{limits[3] // MIB} MiB/s)"
                 if limits else " (no limit)"), flush=True)
        if limits:
            names = ("read IOPS", "write IOPS", "read bytes/s", "write bytes/s")
            off = [f"{n} {m:.1f} vs {lim}" for n, m, lim in zip(names, measured, limits, strict=True)
                   if abs(m - lim) > TOLERANCE * lim]
            assert not off, f"{label}: not within {TOLERANCE:.0%} of the limits: {off}"

    def container_cgroups(self, pod):
        """The blkio cgroups of the pod's containers on the host (cgroup v1, kubelet's cgroupfs layout)."""
        uid = self.c.get("pod", pod, "-n", "default")["metadata"]["uid"]
        pods = list(CGROUP_V1_BLKIO.glob(f"**/pod{uid}"))
        return [d for p in pods for d in p.iterdir() if d.is_dir()]

    def limited(self, pod, device, limits):
        """Whether every container cgroup of the pod has the write bytes limit on the device."""
        cgroups = self.container_cgroups(pod)
        want = f"{device} {limits[3]}"
        return cgroups and all(want in (d / "blkio.throttle.write_bps_device").read_text().splitlines()
                               for d in cgroups)

    def change_class(self, name):
        self.c.kubectl("patch", "pvc", CLAIM, "-n", "default", "--type=merge",
                       "-p", json.dumps({"spec": {"volumeAttributesClassName": name}}))
        self.c.wait_for(f"claim {CLAIM} status.currentVolumeAttributesClassName {name}", lambda: (
            self.c.get("pvc", CLAIM, "-n", "default")["status"].get("currentVolumeAttributesClassName") == name),
            RECONCILED)

    def run(self):
        if not CGROUP_V1_BLKIO.is_dir():
            raise AssertionError(f"the real node needs cgroup v1's {CGROUP_V1_BLKIO} (kubelet runs cgroupfs, v1)")
        for name, limits in CLASSES.items():
            self.c.apply(vac(name, limits))
        self.c.apply(pvc(CLAIM, "blockpool-ext4", "256Mi"))
        self.t.app(POD, CLAIM)
        v = self.t.bound(CLAIM)
        loop, _ = self.t.mounts_of(v)
        device = host.loop_dev(loop)
        self.measure(POD, "no limit", None)
        for name, limits in CLASSES.items():
            self.change_class(name)
            # ControllerModifyVolume applied them before it answered: the containers have them now.
            assert self.limited(POD, device, limits), \
                f"{name}: the containers' cgroups of {POD} lack the limits on {device}"
            self.measure(POD, f"class {name[-1]}", limits)
        # A pod started later: NodePublishVolume and the node's look set its containers.
        self.c.kubectl("delete", "pod", "-n", "default", POD, "--wait=true", "--timeout=120s")
        self.t.app(LATER_POD, CLAIM)
        limits = CLASSES["blockpool-e2e-io-b"]
        wait_for(f"{LATER_POD}'s containers limited on {device}", lambda: self.limited(LATER_POD, device, limits),
                 ON_HOST)
        self.measure(LATER_POD, "class b, a pod started later", limits)
        self.c.kubectl("delete", "pod", "-n", "default", LATER_POD, "--wait=true", "--timeout=120s")
        # A raw block claim made with class b (CreateVolume's mutable parameters): its pod's device.
        claim = pvc(BLOCK_CLAIM, "blockpool-ext4", "256Mi", block=True)
        claim["spec"]["volumeAttributesClassName"] = "blockpool-e2e-io-b"
        self.c.apply(claim)
        self.t.app(BLOCK_CLAIM, BLOCK_CLAIM, block=True)
        loop, _ = self.t.mounts_of(self.t.bound(BLOCK_CLAIM))
        device = host.loop_dev(loop)
        wait_for(f"{BLOCK_CLAIM}'s containers limited on {device}",
                 lambda: self.limited(BLOCK_CLAIM, device, limits), ON_HOST)
        self.measure(BLOCK_CLAIM, "class b at creation, raw block", limits, path="/dev/xvda")
        self.c.kubectl("delete", "pod", "-n", "default", BLOCK_CLAIM, "--wait=true", "--timeout=120s")
        print("        figures: " + json.dumps(self.figures), flush=True)
