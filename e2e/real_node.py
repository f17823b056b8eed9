#!/usr/bin/env python3
"""The real node's flows (e2e/README.md, "The real node"): the e2e's control plane, a real kubelet
with containerd, runc and CNI beside it (real_node_setup.py), and pods run there for real. Ends with
f"{LABEL}: N passed, N failed, N skipped"; skips with the reason where this machine cannot
run containers."""

import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import cluster as cl
import host
import io_limits
import real_node_setup
from cluster import DRIVER_NAME, NAMESPACE, ON_HOST, POD, RECONCILED, STARTED, pvc, wait_for
from e2e import E2E
from real_node_setup import KUBELET_DIR, REAL_NODE

LABEL = "e2e-real-node"
BASE = "sidecars-deploy/base"
NODE_PLUGIN = "app.kubernetes.io/name=blockpool-node"
TOPOLOGY_KEY = "topology.blockpool.csi.dev/node"
DATA = "written on the real node\n"
# kubelet's CSI volume plugin's dir: the staging paths (under the driver's name), block maps.
CSI_PLUGIN_DIR = KUBELET_DIR / "plugins" / "kubernetes.io" / "csi"
# What the node plugin's pod serves over HTTP, by container: port, path.
PROBES = {"liveness-probe": (9808, "/healthz"), "node-driver-registrar": (9809, "/healthz"),
          "csi-resizer": (8083, "/healthz/leader-election"), "blockpool": (8090, "/metrics")}


def http_get(url):
    """(status, body) of a GET; (None, the error) when nothing answered."""
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:
        return None, str(e)


def app_pod(name, image, claim, block=False, read_only=False):
    """A busybox pod using the claim, at /data (a file system) or /dev/xvda (raw block), placed by
    the scheduler (WaitForFirstConsumer: its choice provisions the volume)."""
    c = {"name": "app", "image": image, "imagePullPolicy": "Never", "command": ["sleep", "3600"]}
    if block:
        c["volumeDevices"] = [{"name": "data", "devicePath": "/dev/xvda"}]
    else:
        c["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    volume = {"claimName": claim, **({"readOnly": True} if read_only else {})}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [c], "volumes": [{"name": "data", "persistentVolumeClaim": volume}],
                     "terminationGracePeriodSeconds": 0, "automountServiceAccountToken": False}}


class RealNodeFlows(E2E):
    node_name = REAL_NODE

    def __init__(self, c, node):
        super().__init__(c)
        self.node = node

    # ---- the node plugin on the real node -----------------------------------------------

    def node_plugin(self):
        """The DaemonSet's pod on the real node."""
        pods = [p for p in self.c.items("pods", "-n", NAMESPACE, "-l", NODE_PLUGIN)
                if p["spec"].get("nodeName") == REAL_NODE and not p["metadata"].get("deletionTimestamp")]
        assert len(pods) <= 1, f"{len(pods)} node plugin pods on {REAL_NODE}"
        return pods[0] if pods else None

    def node_plugin_ready(self, restarted_from=None):
        """Waits until every container of the node plugin's pod is ready (and, with
        restarted_from, the driver's container restarted since); returns the pod."""
        def ready():
            p = self.node_plugin()
            statuses = (p or {}).get("status", {}).get("containerStatuses") or []
            names = {c["name"] for c in (p or {"spec": {"containers": []}})["spec"]["containers"]}
            driver = next((c for c in statuses if c["name"] == "blockpool"), {})
            return (p and len(statuses) == len(names) and all(c["ready"] for c in statuses)
                    and (restarted_from is None or driver.get("restartCount", 0) > restarted_from) and p)
        return self.c.wait_for("every container of the node plugin's pod ready", ready, POD)

    def probes_answer(self, p):
        """What the pod's liveness probes ask (and the metrics) answers 200 at the pod's address, as
        kubelet asks it."""
        ip = p["status"]["podIP"]
        for container, (port, path) in PROBES.items():
            wait_for(f"{container}: GET {path} on {ip}:{port} answers 200",
                     lambda port=port, path=path: http_get(f"http://{ip}:{port}{path}")[0] == 200, STARTED)
        status, metrics = http_get(f"http://{ip}:8090/metrics")
        assert "csi_plugin_operations_seconds" in metrics, f"/metrics ({status}) has no CSI call histogram"

    def in_container(self, pod, container, *cmd, namespace=NAMESPACE, check=True):
        return self.c.kubectl("exec", "-n", namespace, pod, "-c", container, "--", *cmd, check=check)

    def deploy(self):
        """kubectl apply -k of the base, with only its images and pull policy overlaid: the
        DaemonSet's pod on the real node, every container ready; what their liveness probes ask
        answers; inside the driver's container kubelet's dir is a shared mount and /dev is the
        host's, with its loop devices; CSIStorageCapacity published for the node."""
        overlay = self.node.overlay(BASE)
        rendered = self.c.render(overlay)
        ds = self.c.workload(rendered, "DaemonSet", "blockpool-node")
        for c in ds["spec"]["template"]["spec"]["containers"]:
            assert c["image"].startswith("localhost/") and c["imagePullPolicy"] == "Never", \
                f"the overlay left {c['name']} at {c['image']} ({c['imagePullPolicy']})"
        self.c.kubectl("apply", "-k", overlay)
        p = self.node_plugin_ready()
        self.probes_answer(p)
        restarted = {c["name"]: c["restartCount"] for c in p["status"]["containerStatuses"] if c["restartCount"]}
        assert not restarted, f"containers restarted: {restarted}"
        name = p["metadata"]["name"]
        propagation = self.in_container(name, "blockpool", "findmnt", "-n", "-o", "PROPAGATION",
                                        "--mountpoint", str(KUBELET_DIR)).strip()
        assert propagation == "shared", f"{KUBELET_DIR} in the driver's container is {propagation!r}, not shared"
        assert self.in_container(name, "blockpool", "stat", "-c", "%F", "/dev/loop-control").strip() \
            == "character special file", "no /dev/loop-control in the driver's container"
        uid = self.in_container(name, "blockpool", "id", "-u").strip()
        print(f"        node plugin {name}: driver as uid {uid}, {KUBELET_DIR} {propagation}")

        def published():
            caps = [cap for cap in self.c.items("csistoragecapacities", "-n", NAMESPACE) if cap.get("capacity")
                    and cap.get("nodeTopology", {}).get("matchLabels", {}).get(TOPOLOGY_KEY) == REAL_NODE]
            return {cap["storageClassName"] for cap in caps} >= {"blockpool-ext4", "blockpool-xfs"}
        self.c.wait_for(f"CSIStorageCapacity of both classes for {REAL_NODE}", published, RECONCILED)

    def registered(self):
        """node-driver-registrar's socket in kubelet's plugins_registry, kubelet's registration:
        CSINode lists the driver with its topology key, the Node carries its segment."""
        registry = self.node.root() / KUBELET_DIR.relative_to("/") / "plugins_registry"
        socket = registry / f"{DRIVER_NAME}-reg.sock"
        assert socket.is_socket(), f"no {socket.name} in kubelet's plugins_registry: {sorted(os.listdir(registry))}"

        def listed():
            drivers = (self.c.get("csinode", REAL_NODE) or {}).get("spec", {}).get("drivers") or []
            return next((d for d in drivers if d["name"] == DRIVER_NAME), None)
        d = self.c.wait_for(f"CSINode {REAL_NODE} lists {DRIVER_NAME}", listed, RECONCILED)
        assert d["nodeID"] == REAL_NODE and d.get("topologyKeys") == [TOPOLOGY_KEY], f"CSINode's entry: {d}"
        labels = self.c.get("node", REAL_NODE)["metadata"]["labels"]
        assert labels.get(TOPOLOGY_KEY) == REAL_NODE, f"the node's {TOPOLOGY_KEY} label: {labels.get(TOPOLOGY_KEY)!r}"

    # ---- volumes ------------------------------------------------------------------------

    def app(self, name, claim, **kw):
        self.c.apply(app_pod(name, self.node.images["busybox"][1], claim, **kw))
        p = self.running_pod(name)
        assert p["spec"]["nodeName"] == REAL_NODE, f"{name} ran on {p['spec']['nodeName']}"
        return p

    def bound(self, claim):
        v = self.bound_claim(claim)
        pv = self.c.get("pv", v["pv"])
        terms = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
        assert any(e["key"] == TOPOLOGY_KEY and e["values"] == [REAL_NODE] for t in terms
                   for e in t["matchExpressions"]), f"PV {v['pv']} is not pinned to {REAL_NODE}: {terms}"
        v["image"] = self.node.pool / "volumes" / f"{v['handle']}.img"
        assert v["image"].is_file(), f"no pool image {v['image']}"
        self.node.see_pool_files()
        v["loop_of"] = lambda: next(iter(host.loops_backed_by({host.file_id(v["image"])})), None)
        return v

    def mounts_of(self, v):
        """The loop device of the volume's image and its mounts in the node's namespace."""
        loop = v["loop_of"]()
        assert loop, f"no loop device is bound to {v['image']}"
        return loop, [m for m in self.node.mounts() if m["dev"] == host.loop_dev(loop)]

    def fs_claim(self):
        """A pod writes a file to a claim of the base's ext4 class, is deleted; a new pod reads it
        back. The volume is staged and published by the driver's container, seen in the node's
        mount namespace."""
        claim = "rn-fs"
        self.c.apply(pvc(claim, "blockpool-ext4", "256Mi"))
        p = self.app("rn-writer", claim)
        v = self.bound(claim)
        self.c.kubectl("exec", "-n", "default", "rn-writer", "--", "sh", "-c", f"printf '{DATA}' > /data/hello && sync")
        loop, ms = self.mounts_of(v)
        staged = [m for m in ms if m["path"].startswith(f"{CSI_PLUGIN_DIR / DRIVER_NAME}/")
                  and m["path"].endswith("/globalmount")]
        publish = KUBELET_DIR / "pods" / p["metadata"]["uid"] / "volumes/kubernetes.io~csi" / v["pv"] / "mount"
        assert len(staged) == 1 and staged[0]["fstype"] == "ext4", f"staging mounts of {loop}: {ms}"
        assert any(m["path"] == str(publish) and m["fstype"] == "ext4" for m in ms), f"no ext4 at {publish}: {ms}"
        v.update(staging=staged[0]["path"], loop=loop)
        self.volumes[claim] = v
        self.c.kubectl("delete", "pod", "-n", "default", "rn-writer", "--wait=true", "--timeout=120s")
        wait_for(f"{publish} unmounted in the node's namespace",
                 lambda: not any(m["path"] == str(publish) for m in self.node.mounts()), ON_HOST)
        self.app("rn-reader", claim)
        out = self.c.kubectl("exec", "-n", "default", "rn-reader", "--", "cat", "/data/hello")
        assert out == DATA, f"rn-reader read {out!r}"

    def propagation(self):
        """The staging mount the driver made in its container is in the node's mount table (the
        Bidirectional mount's propagation), holding what the pod wrote; the pod's own mount is
        of the same device."""
        v = self.volumes["rn-fs"]
        root = self.node.root()
        _, ms = self.mounts_of(v)
        assert any(m["path"] == v["staging"] for m in ms), f"{v['staging']} not in the node's mount table"
        text = (root / v["staging"].lstrip("/") / "hello").read_text()
        assert text == DATA, f"the staging mount holds {text!r}"
        p = self.c.get("pod", "rn-reader", "-n", "default")
        publish = KUBELET_DIR / "pods" / p["metadata"]["uid"] / "volumes/kubernetes.io~csi" / v["pv"] / "mount"
        assert any(m["path"] == str(publish) for m in ms), f"the pod's {publish} is not of {v['loop']}: {ms}"
        assert not host.mounts(self.node.kubelet_dir), "the node's mounts show in the host's mount table"

    def block_claim(self):
        """A pod writes bytes to a raw block claim and reads them back; they are in the pool image."""
        claim = "rn-block"
        self.c.apply(pvc(claim, "blockpool-ext4", "64Mi", block=True))
        self.app("rn-block", claim, block=True)
        v = self.bound(claim)
        tag = "blockpool real node raw block"
        self.c.kubectl("exec", "-n", "default", "rn-block", "--", "sh", "-c",
                       f"printf '{tag}' | dd of=/dev/xvda conv=fsync 2>/dev/null")
        out = self.c.kubectl("exec", "-n", "default", "rn-block", "--", "dd", "if=/dev/xvda", f"bs={len(tag)}",
                             "count=1", "status=none")
        assert out == tag, f"rn-block read {out!r} back"
        with open(v["image"], "rb") as f:
            assert f.read(len(tag)).decode() == tag, "the bytes written to the device are not in the pool image"
        loop, ms = self.mounts_of(v)
        assert not any(m["fstype"] in ("ext4", "xfs") for m in ms), f"a file system is mounted from {loop}: {ms}"
        self.volumes[claim] = v

    def driver_killed(self):
        """The driver's container frozen, its liveness endpoint answers 500: the driver did not
        answer within livenessprobe's --probe-timeout; killed (SIGKILL) while rn-reader uses its
        volume, node-driver-registrar running on: kubelet
        restarts it, it becomes ready and its probe answers again; the pod's data is intact and
        writable; the pod's deletion then unpublishes and unstages the volume and detaches its
        loop device."""
        v = self.volumes["rn-fs"]
        p = self.node_plugin()
        driver = next(c for c in p["status"]["containerStatuses"] if c["name"] == "blockpool")
        container = driver["containerID"].removeprefix("containerd://")
        # Frozen, the driver cannot answer: livenessprobe's connection for its Probe gets no
        # answer within --probe-timeout, and the liveness endpoint says so, as kubelet would see.
        port, path = PROBES["liveness-probe"]
        self.node.ctr("tasks", "pause", container)
        try:
            status, reason = http_get(f"http://{p['status']['podIP']}:{port}{path}")
        finally:
            self.node.ctr("tasks", "resume", container)
        assert status == 500 and "deadline exceeded" in reason, f"{path} of a frozen driver: {status} {reason!r}"
        self.node.ctr("tasks", "kill", "-s", "SIGKILL", container)
        p = self.node_plugin_ready(restarted_from=driver["restartCount"])
        self.probes_answer(p)
        restarted = {c["name"]: c["restartCount"] for c in p["status"]["containerStatuses"] if c["restartCount"]}
        assert restarted == {"blockpool": driver["restartCount"] + 1}, f"containers restarted: {restarted}"
        out = self.c.kubectl("exec", "-n", "default", "rn-reader", "--", "sh", "-c",
                             "cat /data/hello && echo again > /data/after-restart && sync && cat /data/after-restart")
        assert out == DATA + "again\n", f"rn-reader read {out!r} after the driver's restart"
        self.c.kubectl("delete", "pod", "-n", "default", "rn-reader", "--wait=true", "--timeout=120s")
        wait_for("rn-fs unstaged and its loop device detached",
                 lambda: not any(m["path"] == v["staging"] for m in self.node.mounts()) and not v["loop_of"](), ON_HOST)

    def read_only(self):
        """A pod given the claim read-only reads the file and cannot write: EROFS."""
        p = self.app("rn-readonly", "rn-fs", read_only=True)
        assert self.c.kubectl("exec", "-n", "default", "rn-readonly", "--", "cat", "/data/hello") == DATA
        try:
            self.c.kubectl("exec", "-n", "default", "rn-readonly", "--", "sh", "-c", "echo no > /data/denied")
        except cl.KubectlError as e:
            assert "Read-only file system" in e.stderr, f"writing to the read-only claim: {e.stderr.strip()!r}"
        else:
            raise AssertionError("rn-readonly wrote to its read-only claim")
        publish = KUBELET_DIR / "pods" / p["metadata"]["uid"] / "volumes/kubernetes.io~csi"
        ms = [m for m in self.node.mounts() if m["path"].startswith(str(publish) + "/")]
        assert len(ms) == 1 and "ro" in ms[0]["options"], f"the pod's mount in the node's namespace: {ms}"

    def io_limits(self):
        """A pod's direct I/O on its claim without a limit, under a VolumeAttributesClass's limits and
        after a change to another class, in a pod started later, and on a raw block claim made with
        a class: within 10 % of each limit (io_limits.py)."""
        io_limits.IoLimitsFlow(self).run()

    def delete_everything(self):
        """The pods and the claims at once, as a user deletes them, then, once kubelet has let go of
        the volumes, the manifests: no mount left under kubelet's dir in the node's namespace, no
        loop device bound to the pool's files, no image file in the pool. The pods have no grace
        period: they leave the API at once and the claims' volumes are to be deleted while kubelet
        still unpublishes and unstages them. DeleteVolume answers FAILED_PRECONDITION until a
        volume is unstaged, and csi-provisioner retries it with its backoff: the PVs go after
        kubelet has let go, within one more RECONCILED."""
        self.node.see_pool_files()
        self.c.kubectl("delete", "pods", "-n", "default", "--all", "--wait=true", "--timeout=120s")
        self.c.kubectl("delete", "pvc", "-n", "default", "--all", "--wait=true", "--timeout=120s")
        self.c.wait_for("kubelet's unpublish and unstage of every volume, their loop devices detached", lambda: not [
            m for m in self.node.mounts() if "/kubernetes.io~csi/" in m["path"]
            or m["path"].startswith(f"{CSI_PLUGIN_DIR}/")]
            and not host.loops_backed_by(self.node.pool_files), ON_HOST)
        self.c.wait_for("the PVs deleted", lambda: not self.c.items("pv"), RECONCILED)
        self.c.kubectl("delete", "-k", self.node.dir / "manifests", "--wait=true", "--timeout=180s")
        self.c.wait_for("the node plugin's containers gone from containerd",
                        lambda: not self.node.ctr("tasks", "ls", "-q").stdout.split(), RECONCILED)
        left = [m["path"] for m in self.node.mounts()]
        assert not left, f"mounts left under {KUBELET_DIR} in the node's namespace: {left}"
        loops = host.loops_backed_by(self.node.pool_files)
        assert not loops, f"loop devices left bound to the pool's files: {loops}"
        images = host.pool_records(self.node.pool)
        assert not images["volumes"] and not images["snapshots"], f"files left in the pool: {images}"

    # ---- the first steps ----------------------------------------------------------------

    def start_node(self):
        """Starts the real node while the host has a mount of its own (a tmpfs in a temp dir
        outside the run's): the node's mount namespace holds no copy of it, which would keep it,
        and the loop device of such a mount, busy after the host unmounts it."""
        elsewhere = Path(tempfile.mkdtemp(prefix="blockpool-e2e-host-mount."))
        try:
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "blockpool-e2e-host-mount", elsewhere],
                           check=True, capture_output=True)
            self.node.start()
            held = host.mounts(elsewhere, self.node.namespace.popen.pid)
            assert not held, f"the node's mount namespace holds a copy of the host's mount {held}"
        finally:
            subprocess.run(["umount", elsewhere], check=False, capture_output=True)
            elsewhere.rmdir()

    def busybox_runs(self):
        """A plain busybox pod on the real node becomes Running; its output is read back through
        kubelet; once deleted, its container is gone from containerd."""
        name = "busybox-hello"
        self.c.apply(real_node_setup.pod_on_node(name, self.node.images["busybox"][1], command=[
            "/bin/sh", "-c", "echo hello from $(hostname); exec sleep 3600"]))
        p = self.running_pod(name)
        assert p["spec"]["nodeName"] == real_node_setup.REAL_NODE, f"{name} ran on {p['spec']['nodeName']}"
        out = wait_for(f"{name}'s output", lambda: self.c.kubectl("logs", "-n", "default", name).strip(), ON_HOST)
        assert out == f"hello from {name}", f"{name} printed {out!r}"
        self.c.kubectl("delete", "pod", "-n", "default", name, "--wait=true", "--timeout=120s")
        wait_for(f"{name}'s containers gone from containerd",
                 lambda: not self.node.ctr("tasks", "ls", "-q").stdout.split(), timeout=120)

    def driver_image_runs(self):
        """The project's image, by its own entrypoint, runs under containerd and runc: the driver
        answers --version with the image's version and exits 0."""
        name = "blockpool-version"
        image = self.node.images["driver"][1]
        self.c.apply(real_node_setup.pod_on_node(name, image, args=["--version"]))
        def finished():
            p = self.c.get("pod", name, "-n", "default")
            return p and p["status"].get("phase") in ("Succeeded", "Failed") and p
        pod = wait_for(f"{name} finished", finished, POD)
        out = self.c.kubectl("logs", "-n", "default", name).strip()
        assert pod["status"]["phase"] == "Succeeded", f"{name} failed: {out[-600:]!r}"
        version = image.rpartition(":")[2]
        assert version in out, f"{name} printed {out!r}, not the image's version {version}"
        self.c.kubectl("delete", "pod", "-n", "default", name, "--wait=true", "--timeout=120s")


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    began = time.monotonic()
    why = real_node_setup.why_no_containers()
    if why:
        print(f"{LABEL}: skipped: {why}")
        print(f"{LABEL}: 0 passed, 0 failed, 1 skipped")
        return 0
    work = Path(tempfile.mkdtemp(prefix="blockpool-e2e-real-node."))
    c = cl.Cluster(work)
    node = real_node_setup.RealNode(c)
    t = RealNodeFlows(c, node)
    print(f"{LABEL}: working in {work}", flush=True)
    interrupted = False
    try:
        t.run([("control plane: etcd, kube-apiserver, controller-manager, scheduler", c.start_control_plane),
               ("real node: images in containerd, kubelet (cgroupfs, cgroup v1) Ready, no host mount held",
                t.start_node),
               ("busybox pod Running on the real node, its output read back, its container gone after",
                t.busybox_runs),
               ("the project's image runs as a pod on the real node (blockpool-csi --version)", t.driver_image_runs),
               ("the base's manifests: the node plugin's pod ready, its probes and metrics answer", t.deploy),
               ("the node plugin registers with kubelet (CSINode, topology)", t.registered),
               ("a file written to an ext4 claim by one pod is read back by the next", t.fs_claim),
               ("mount propagation: the driver's staging mount, with the pod's data, in the node's mounts",
                t.propagation),
               ("a raw block claim written and read by a pod", t.block_claim),
               ("the driver's container killed under a pod: restarted, ready, the data intact, unstaged after",
                t.driver_killed),
               ("a read-only claim cannot be written (EROFS)", t.read_only),
               ("I/O limits of VolumeAttributesClasses: a pod's direct I/O within 10 % of each, online",
                t.io_limits),
               ("deleting everything leaves no mount, loop device or pool image", t.delete_everything)])
    except (KeyboardInterrupt, SystemExit):
        interrupted = True
        t.results.append(("interrupted", "FAIL", 0, "interrupted"))
    finally:
        left = []
        try:
            left = node.teardown()
        finally:
            t.after_teardown(left + c.teardown(), LABEL, logs_prefix="real-node-")
    return t.summary(began, interrupted, LABEL)


if __name__ == "__main__":
    sys.exit(main())
