#!/usr/bin/env python3
"""The real node's flows (e2e/README.md, "The real node"): the e2e's control plane, a real kubelet
with containerd, runc and CNI beside it (realnode.py), and pods run there for real. Ends with
f"{LABEL}: N passed, N failed, N skipped"; skips with the reason where this machine cannot
run containers."""

import signal
import sys
import tempfile
import time
from pathlib import Path

import cluster as cl
import realnode
from cluster import ON_HOST, POD, wait_for
from e2e import E2E

LABEL = "e2e-real-node"


class RealNodeFlows(E2E):
    def __init__(self, c, node):
        super().__init__(c)
        self.node = node

    def busybox_runs(self):
        """A plain busybox pod on the real node becomes Running; its output is read back through
        kubelet; once deleted, its container is gone from containerd."""
        name = "busybox-hello"
        self.c.apply(realnode.pod_on_node(name, self.node.images["busybox"][1], command=[
            "/bin/sh", "-c", "echo hello from $(hostname); exec sleep 3600"]))
        p = self.running_pod(name)
        assert p["spec"]["nodeName"] == realnode.REAL_NODE, f"{name} ran on {p['spec']['nodeName']}"
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
        self.c.apply(realnode.pod_on_node(name, image, args=["--version"]))
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
    why = realnode.why_no_containers()
    if why:
        print(f"{LABEL}: skipped: {why}")
        print(f"{LABEL}: 0 passed, 0 failed, 1 skipped")
        return 0
    work = Path(tempfile.mkdtemp(prefix="blockpool-e2e-real-node."))
    c = cl.Cluster(work)
    node = realnode.RealNode(c)
    t = RealNodeFlows(c, node)
    print(f"{LABEL}: working in {work}", flush=True)
    interrupted = False
    try:
        ok = t.flow("control plane: etcd, kube-apiserver, controller-manager, scheduler", c.start_control_plane)
        ok = ok and t.flow("real node: images imported into containerd; kubelet (cgroupfs, cgroup v1) Ready",
                           node.start)
        for name, fn in (("busybox pod Running on the real node, its output read back, its container gone after",
                          t.busybox_runs),
                         ("the project's image runs as a pod on the real node (blockpool-csi --version)",
                          t.driver_image_runs)):
            ok and t.flow(name, fn)
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
