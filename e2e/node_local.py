"""The node-local phase of the end-to-end test: a cluster of two hollow nodes, each with its own
pool (a tmpfs of its own size) and its own node-plugin processes run with the arguments
`kubectl kustomize sidecars-deploy/base` gives the DaemonSet's containers: the driver
(--mode=all --pool-scope=node), node-driver-registrar, and csi-provisioner, csi-snapshotter and
csi-resizer under the node plugin's ServiceAccount token."""
import json
import os
import signal
import socket
import ssl
import subprocess
import threading
import time
from pathlib import Path

import cluster as cl
import host
from cluster import (
    BIN,
    DRIVER,
    DRIVER_NAME,
    KUBECTL,
    MANIFEST_KUBELET,
    MANIFEST_POOL,
    NAMESPACE,
    ON_HOST,
    POD,
    RECONCILED,
    SCHEDULER,
    STARTED,
    pvc,
    quantity,
    wait_for,
)

BASE = "sidecars-deploy/base"
NODE_SIDECARS = ["csi-provisioner", "csi-snapshotter", "csi-resizer"]
TOPOLOGY = "topology.blockpool.csi.dev/node"
GI = 1 << 30
# csi-provisioner asks each node's GetCapacity again this often (its --capacity-poll-interval default).
CAPACITY_POLL = 60
NS = "default"
PEER_CA_SECRET = "blockpool-peer-ca"  # the Secret the base's DaemonSet mounts at --peer-ca-dir
EXT4 = "blockpool-ext4"  # the StorageClass of the claims here
# Node a's pool holds 5 GiB, node b's 8 GiB, and each promises no more than 99 % of it: a 5 GiB
# claim fits only node b's, after which a 4 GiB one fits neither's remaining promise.
NODES = {"e2e-node-a": 5, "e2e-node-b": 8}


class Node:
    def __init__(self, c: cl.Cluster, name, pool_gib):
        self.c, self.name = c, name
        self.peer_port = cl.free_port()
        self.root = c.work / name
        self.kubelet = self.root / "kubelet"
        self.pool = self.root / "pool"
        for d in (self.kubelet / "plugins" / DRIVER_NAME, self.kubelet / "plugins_registry", self.pool):
            d.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={pool_gib}g", f"pool-{name}", str(self.pool)],
                       check=True)

    def start_kubelet(self):
        kc = self.c.cert_kubeconfig(f"node-{self.name}", f"system:node:{self.name}", "system:nodes")
        self.c.start(f"kubelet-{self.name}", [BIN / "hollow-node", "--kubeconfig", kc, "--node-name", self.name,
                                             "--root-dir", self.kubelet, "--port", cl.free_port(), "--v=2"])

    def start_plugin(self, ds, token_kubeconfig, peer_ca, others):
        """The DaemonSet's containers on this node, as host processes, under its pod's name. The
        driver's peer channel listens on this node's port; the other nodes are named to it with
        --peer, since the pods of hollow nodes have no address a process on this host reaches, and
        the CA is the directory the test made the Secret from."""
        def daemon_pod():
            pods = self.c.items("pods", "-n", NAMESPACE, "-l", "app.kubernetes.io/name=blockpool-node",
                                "--field-selector", f"spec.nodeName={self.name}")
            return pods[0]["metadata"]["name"] if pods else None
        pod_name = wait_for(f"the DaemonSet's pod on {self.name}", daemon_pod, RECONCILED)
        host_paths = {MANIFEST_KUBELET: self.kubelet, MANIFEST_POOL: self.pool}
        ports = {"blockpool:peer": self.peer_port}

        def command(container):
            return self.c.container_command(ds, container, pod_name, host_paths, ports, node=self.name)
        args, _, _ = command("blockpool")
        assert "--pool-scope=node" in args and "--mode=all" in args, f"the DaemonSet's driver runs {args}"
        assert any(a.startswith("--peer-listen=") for a in args), f"the DaemonSet's driver serves no peers: {args}"
        # the Secret's files where the DaemonSet mounts them, at --peer-ca-dir's default, are here
        args += [f"--peer-ca-dir={peer_ca}"]
        args += [f"--peer={other.name}=127.0.0.1:{other.peer_port}" for other in others]
        (self.root / "driver").mkdir(exist_ok=True)
        self.pod_name, self.peer_ca, self.driver_argv = pod_name, peer_ca, [DRIVER, *args]
        self.driver = self.c.start(f"driver-{self.name}", self.driver_argv, cwd=self.root / "driver")
        reg_args, _, reg_to_host = command("node-driver-registrar")
        reg_args.append("--plugin-registration-path=" + reg_to_host("/registration"))
        self.c.start(f"registrar-{self.name}", [BIN / "csi-node-driver-registrar", *reg_args])
        for sidecar in NODE_SIDECARS:
            sargs, env, _ = command(sidecar)
            self.c.start(f"{sidecar}-{self.name}", [BIN / sidecar, *sargs, f"--kubeconfig={token_kubeconfig}"],
                         env={**env, "POD_NAMESPACE": NAMESPACE})

        def registered():
            csinode = self.c.get("csinode", self.name)
            return csinode and any(d["name"] == DRIVER_NAME and d.get("topologyKeys") == [TOPOLOGY]
                                   for d in csinode["spec"].get("drivers") or [])
        wait_for(f"kubelet on {self.name} registered the driver with its topology key", registered, STARTED)
        labels = self.c.get("node", self.name)["metadata"]["labels"]
        assert labels.get(TOPOLOGY) == self.name, f"{self.name}'s topology label: {labels.get(TOPOLOGY)}"

    def kill_driver(self):
        """SIGKILL of the driver's process, as a crash or the OOM killer would end it."""
        os.killpg(self.driver.popen.pid, signal.SIGKILL)
        self.driver.popen.wait()
        self.c.stop(self.driver)

    def restart_driver(self):
        """The driver started again on the same pool, then the CSI sidecars of its pod, which exit
        when they lose the driver (csi-provisioner at once, others at their next call), as kubelet
        restarts a pod's containers; the registrar keeps running."""
        self.driver = self.c.start(f"driver-{self.name}-restarted", self.driver_argv, cwd=self.root / "driver")
        wait_for(f"{self.name}'s driver serving its peer channel again",
                 lambda: cl.tcp_open("127.0.0.1", self.peer_port), STARTED)
        for p in [p for p in self.c.procs if p.name in {f"{s}-{self.name}" for s in NODE_SIDECARS}]:
            self.c.stop(p)
            self.c.start(f"{p.name}-restarted", p.argv, env=p.env, cwd=p.cwd)

    def images(self):
        return sorted(p.name for p in (self.pool / "volumes").glob("*.img")) if (self.pool / "volumes").is_dir() \
            else []


def pod(name, claim, node=None, block=False):
    c = {"name": "app", "image": "registry.k8s.io/pause:3.10"}
    if block:
        c["volumeDevices"] = [{"name": "data", "devicePath": "/dev/xvda"}]
    else:
        c["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    spec = {"containers": [c], "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
            "terminationGracePeriodSeconds": 0, "automountServiceAccountToken": False}
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS}, "spec": spec}


def stateful_set(name, claim):
    """One replica of a pause container with a 1 GiB claim of its own from the template."""
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "namespace": NS},
            "spec": {"serviceName": name, "replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {
                         "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                                         "volumeMounts": [{"name": claim, "mountPath": "/data"}]}],
                         "terminationGracePeriodSeconds": 0, "automountServiceAccountToken": False}},
                     "volumeClaimTemplates": [{"metadata": {"name": claim}, "spec": {
                         "accessModes": ["ReadWriteOnce"], "storageClassName": EXT4,
                         "resources": {"requests": {"storage": "1Gi"}}}}]}}


class AcknowledgedWriter(threading.Thread):
    """What the pod's application would do: appends numbered records to a file in its volume,
    each fsync'd before it counts as acknowledged, until its pod is being deleted (SIGTERM), then
    closes the file so that kubelet can unmount the volume."""
    RECORD = 4096

    def __init__(self, path, stopping):
        super().__init__(daemon=True)
        self.path, self.stopping = path, stopping
        self.acknowledged, self.error = 0, None
        self.halt = threading.Event()

    def record(self, i):
        return f"{i:012d}".encode().ljust(self.RECORD, b".")

    def run(self):
        try:
            with open(self.path, "wb") as f:
                while not self.halt.is_set():
                    if self.acknowledged % 16 == 0 and self.stopping():
                        return
                    f.write(self.record(self.acknowledged))
                    f.flush()
                    os.fsync(f.fileno())
                    self.acknowledged += 1
                    time.sleep(0.005)
        except OSError as e:
            self.error = e

    def stop(self):
        self.halt.set()
        self.join(timeout=KUBECTL)

    def check(self, path):
        data = path.read_bytes()
        assert len(data) >= self.acknowledged * self.RECORD, \
            f"{path}: {len(data) // self.RECORD} records, {self.acknowledged} were acknowledged"
        for i in range(self.acknowledged):
            got = data[i * self.RECORD:(i + 1) * self.RECORD]
            assert got == self.record(i), f"{path}: record {i} of {self.acknowledged} acknowledged is {got[:16]!r}"


class NodeLocal:
    def __init__(self, c: cl.Cluster):
        self.c = c
        self.nodes = {name: Node(c, name, size) for name, size in NODES.items()}

    # ---- setup -----------------------------------------------------------------------------

    def deploy(self):
        """kubectl apply -k of the base, both hollow kubelets, and each node's plugin processes."""
        self.c.kubectl("apply", "-k", cl.REPO / BASE)
        csidriver = self.c.get("csidriver", DRIVER_NAME)
        assert csidriver["spec"]["attachRequired"] is False, "the base's CSIDriver asks for attachments"
        for node in self.nodes.values():
            node.start_kubelet()
        for name in self.nodes:
            wait_for(f"{name} Ready", lambda n=name: self.c.kubectl(
                "get", "node", n, "-o", "jsonpath={.status.conditions[?(@.type=='Ready')].status}") == "True",
                timeout=3 * STARTED)  # two kubelets starting at once
        token = self.c.kubectl("create", "token", "blockpool-node", "-n", NAMESPACE, "--duration=2h").strip()
        kc = self.c.kubeconfig(self.c.work / "blockpool-node.kubeconfig", {"token": token})
        ds = self.c.workload(self.c.render(BASE), "DaemonSet", "blockpool-node")
        # The peer channel's CA, in the Secret the DaemonSet mounts. The base's Job makes it in a
        # cluster whose pods run; a hollow node runs none, so it is made here as docs/peers.md
        # tells an operator to by hand.
        peer_ca = self.c.work / "peer-ca"
        subprocess.run([DRIVER, "peer-ca", "--out", peer_ca], check=True)
        self.c.kubectl("create", "secret", "generic", PEER_CA_SECRET, "-n", NAMESPACE,
                       f"--from-file={peer_ca / 'ca.crt'}", f"--from-file={peer_ca / 'ca.key'}")
        for node in self.nodes.values():
            node.start_plugin(ds, kc, peer_ca, [n for n in self.nodes.values() if n is not node])
        # The kubectl plugin that moves claims, as an operator builds it; it reaches a node plugin's
        # pod through node_exec.py, which runs the command as that node's driver runs here.
        self.kubectl_blockpool = self.c.work / "kubectl-blockpool"
        subprocess.run(["go", "build", "-o", self.kubectl_blockpool, "."], cwd=cl.REPO / "kubectl-plugin", check=True)
        self.node_exec = self.c.work / "node-exec.json"
        self.node_exec.write_text(json.dumps({n.pod_name: {
            "driver": str(DRIVER), "pool": str(n.pool), "peer_ca": str(n.peer_ca),
            "peers": {o.name: f"127.0.0.1:{o.peer_port}" for o in self.nodes.values() if o is not n}}
            for n in self.nodes.values()}))

    # ---- helpers ---------------------------------------------------------------------------

    def bound(self, claim):
        wait_for(f"claim {claim} Bound", lambda: (self.c.get("pvc", claim, "-n", NS) or {}).get(
            "status", {}).get("phase") == "Bound", RECONCILED)
        p = self.c.get("pvc", claim, "-n", NS)
        pv = self.c.get("pv", p["spec"]["volumeName"])
        terms = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
        nodes = [v for t in terms for e in t["matchExpressions"] if e["key"] == TOPOLOGY for v in e["values"]]
        return pv["spec"]["csi"]["volumeHandle"], nodes, p["metadata"]["annotations"].get(
            "volume.kubernetes.io/selected-node")

    def running(self, name):
        def up():
            p = self.c.get("pod", name, "-n", NS)
            return p and p["status"].get("phase") == "Running" and p
        return wait_for(f"pod {name} Running", up, POD)

    def placed(self, claim, node):
        """The claim's volume is in `node`'s pool, pinned there, and in no other pool."""
        handle, affinity, selected = self.bound(claim)
        assert selected == node, f"{claim}: selected node {selected}, expected {node}"
        assert affinity == [node], f"{claim}: PV node affinity {affinity}"
        for other in self.nodes.values():
            has = f"{handle}.img" in other.images()
            assert has == (other.name == node), f"{claim}: image {handle} in {other.name}'s pool: {has}"
        return handle

    def publish_dir(self, pod_name, node):
        p = self.running(pod_name)
        pv = self.c.get("pv", self.c.get("pvc", p["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"],
                                         "-n", NS)["spec"]["volumeName"])
        return self.nodes[node].kubelet / "pods" / p["metadata"]["uid"] / "volumes/kubernetes.io~csi" / \
            pv["metadata"]["name"] / "mount"

    # ---- flows -----------------------------------------------------------------------------

    def capacities(self):
        """Each node's CSIStorageCapacity object of the ext4 StorageClass, by node name."""
        caps = self.c.items("csistoragecapacities", "-n", NAMESPACE)
        return {cap["nodeTopology"]["matchLabels"].get(TOPOLOGY): cap for cap in caps
                if cap["storageClassName"] == EXT4 and cap.get("capacity")}

    def capacity(self):
        caps = wait_for("CSIStorageCapacity of each node",
                        lambda: set(self.nodes) <= self.capacities().keys() and self.capacities(), RECONCILED)
        for name, node in self.nodes.items():
            owners = [o["kind"] for o in caps[name]["metadata"].get("ownerReferences", [])]
            assert owners == ["DaemonSet"], f"{name}: capacity owned by {owners}"
            assert 0 < quantity(caps[name]["capacity"]) < host.fs_size(node.pool), f"{name}: {caps[name]}"

    def lands_on_its_pods_node(self):
        began = time.monotonic()
        self.c.apply([pvc("local-a", EXT4, "1Gi"), pod("app-local-a", "local-a", node="e2e-node-a")])
        self.placed("local-a", "e2e-node-a")
        publish = self.publish_dir("app-local-a", "e2e-node-a")
        print(f"        claim to running pod: {time.monotonic() - began:.1f} s")
        # fsync'd: a snapshot holds what reached the volume's device
        with open(publish / "e2e-data", "w") as f:
            f.write("written on node a\n")
            f.flush()
            os.fsync(f.fileno())

    def fits_only_node_b(self):
        self.c.apply([pvc("big", EXT4, "5Gi"), pod("app-big", "big")])
        self.placed("big", "e2e-node-b")
        assert self.running("app-big")["spec"]["nodeName"] == "e2e-node-b"

    def fits_no_nodes_remaining_promise(self):
        """A 4 GiB claim: each pool was large enough when empty, but neither may still promise
        it (node a holds a 1 GiB claim, node b the 5 GiB one). Once csi-provisioner's next look
        has published what each pool may still promise, the scheduler leaves the pod Pending,
        saying why, and no pool makes a volume for it."""
        wait_for("node b's CSIStorageCapacity counts the 5 GiB claim",
                 lambda: quantity(self.capacities()["e2e-node-b"]["capacity"]) < 4 * GI,
                 RECONCILED + CAPACITY_POLL)
        before = {name: host.pool_records(node.pool) for name, node in self.nodes.items()}
        self.c.apply([pvc("beyond-promise", EXT4, "4Gi"), pod("app-beyond-promise", "beyond-promise")])

        def not_scheduled():
            events = self.c.items("events", "-n", NS, "--field-selector",
                                  "involvedObject.name=app-beyond-promise,reason=FailedScheduling")
            return [e["message"] for e in events if "did not have enough free storage" in e["message"]]
        messages = wait_for("FailedScheduling for lack of storage capacity", not_scheduled, SCHEDULER)
        assert "2 node(s) did not have enough free storage" in messages[-1], messages
        assert not self.c.get("pod", "app-beyond-promise", "-n", NS)["spec"].get("nodeName")
        assert self.c.get("pvc", "beyond-promise", "-n", NS)["status"]["phase"] == "Pending"
        assert {name: host.pool_records(node.pool) for name, node in self.nodes.items()} == before, \
            "a pool changed for a claim that fits no node"
        self.c.kubectl("delete", "pod", "app-beyond-promise", "-n", NS, "--wait=true", "--timeout=120s")
        self.c.kubectl("delete", "pvc", "beyond-promise", "-n", NS, "--wait=true", "--timeout=120s")

    def snapshot_restore_clone(self):
        self.c.apply({"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
                      "metadata": {"name": "snap-a", "namespace": NS},
                      "spec": {"volumeSnapshotClassName": "blockpool-snapshots",
                               "source": {"persistentVolumeClaimName": "local-a"}}})
        wait_for("snapshot snap-a ready", lambda: (self.c.get("volumesnapshot", "snap-a", "-n", NS) or {}).get(
            "status", {}).get("readyToUse") is True, RECONCILED)
        bound = self.c.get("volumesnapshot", "snap-a", "-n", NS)["status"]["boundVolumeSnapshotContentName"]
        content = self.c.get("volumesnapshotcontent", bound)
        assert content["metadata"]["labels"].get("snapshot.storage.kubernetes.io/managed-by") == "e2e-node-a"
        for claim, source in (("restored-a", {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot",
                                              "name": "snap-a"}),
                              ("cloned-a", {"kind": "PersistentVolumeClaim", "name": "local-a"})):
            self.c.apply([pvc(claim, EXT4, "1Gi", source=source), pod(f"app-{claim}", claim, node="e2e-node-a")])
            self.placed(claim, "e2e-node-a")
            data = (self.publish_dir(f"app-{claim}", "e2e-node-a") / "e2e-data").read_text()
            assert data == "written on node a\n", f"{claim}: {data!r}"

    def restores_on_another_node(self):
        """The snapshot of node a's claim restored into a pod that must run on node b: node b's
        driver pulls the snapshot's image from node a's pool through the peer channel (CreateVolume
        answers ABORTED until it has it), and the pod on node b reads what was written on node a."""
        source = {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "snap-a"}
        self.c.apply([pvc("restored-b", EXT4, "1Gi", source=source),
                      pod("app-restored-b", "restored-b", node="e2e-node-b")])
        self.placed("restored-b", "e2e-node-b")
        data = (self.publish_dir("app-restored-b", "e2e-node-b") / "e2e-data").read_text()
        assert data == "written on node a\n", f"restored-b: {data!r}"
        for n in self.nodes.values():
            left = sorted(p.name for d in ("incoming", "outgoing") for p in (n.pool / d).glob("*.img"))
            assert not left, f"{n.name}: transfer images left after the restore: {left}"

    def peers_refuse_strangers(self):
        """A client without the cluster CA's certificate gets no answer from a node's peer channel:
        the TLS handshake ends with the server's refusal, before any request is read."""
        port = self.nodes["e2e-node-a"].peer_port
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            try:
                with context.wrap_socket(raw) as tls:
                    tls.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
                    answer = tls.recv(1)
                assert not answer, f"node a's peer channel answered a client without a certificate: {answer!r}"
            except (ssl.SSLError, ConnectionError):
                pass  # refused in the handshake, as it must be

    def modifies_on_its_node(self):
        """examples/volumeattributesclass.yaml set on node b's sparse raw block claim: the one
        csi-resizer that leads, on either node, calls ControllerModifyVolume of its node's driver,
        which applies it or hands it to node b's through the peer channel; node b's image is then
        preallocated."""
        handle, _, _ = self.bound("block-b")
        image = self.nodes["e2e-node-b"].pool / "volumes" / f"{handle}.img"
        assert image.stat().st_blocks * 512 < image.stat().st_size, f"{image} is not sparse"
        self.c.kubectl("apply", "-f", cl.REPO / "sidecars-deploy/examples/volumeattributesclass.yaml")
        self.c.kubectl("patch", "pvc", "block-b", "-n", NS, "--type=merge",
                       "-p", json.dumps({"spec": {"volumeAttributesClassName": "blockpool-preallocated"}}))
        wait_for("block-b's status.currentVolumeAttributesClassName blockpool-preallocated", lambda: (
            self.c.get("pvc", "block-b", "-n", NS)["status"].get("currentVolumeAttributesClassName")
            == "blockpool-preallocated"), RECONCILED)
        assert image.stat().st_blocks * 512 >= image.stat().st_size, f"{image} not preallocated"

    def raw_block(self):
        self.c.apply([pvc("block-b", EXT4, "1Gi", block=True), pod("app-block-b", "block-b", node="e2e-node-b",
                                                            block=True)])
        self.placed("block-b", "e2e-node-b")
        self.running("app-block-b")

    def expansion(self):
        """The raw block claim grown: no controller reaches node b's pool, so csi-resizer only
        records the size and kubelet's NodeExpandVolume grows the image and its loop device there,
        the pod running. (A raw block claim: a mounted ext4 grows only with CAP_SYS_RESOURCE,
        which some machines withhold from root; the shared flows cover file systems.)"""
        self.c.kubectl("patch", "pvc", "block-b", "-n", NS, "--type=merge",
                       "-p", '{"spec":{"resources":{"requests":{"storage":"1536Mi"}}}}')
        handle, _, _ = self.bound("block-b")
        image = self.nodes["e2e-node-b"].pool / "volumes" / f"{handle}.img"
        # Two controllers in turn (csi-resizer, then kubelet's NodeExpandVolume at its next look at
        # the pod's volumes), as for any claim the API shows grown: RECONCILED, not ON_HOST.
        wait_for("the claim's capacity 1536Mi", lambda: self.c.get("pvc", "block-b", "-n", NS)["status"].get(
            "capacity", {}).get("storage") == "1536Mi", RECONCILED)
        assert image.stat().st_size == 1536 << 20, f"node b's image is {image.stat().st_size} bytes"
        loop = host.loop_of(image)
        size = int((Path("/sys/block") / loop / "size").read_text()) * 512
        assert size == 1536 << 20, f"{loop} is {size} bytes"
        assert self.c.get("pod", "app-block-b", "-n", NS)["status"]["phase"] == "Running"

    def deleted_while_staged(self):
        """A claim deleted with its pod while kubelet cannot unstage its volume yet: a process on
        the node has its working directory in the staging mount, so that unmount is busy. The
        volume is in use on its node: DeleteVolume answers FAILED_PRECONDITION naming its loop
        device and staging path (csi-provisioner's event on the PV), the PV stays and the image
        stays in the pool. Once the process lets go, kubelet unstages the volume and
        csi-provisioner's retry deletes it."""
        node = self.nodes["e2e-node-a"]
        self.c.apply([pvc("in-use", EXT4, "1Gi"), pod("app-in-use", "in-use", node=node.name)])
        handle = self.placed("in-use", node.name)
        self.running("app-in-use")
        pv_name = self.c.get("pvc", "in-use", "-n", NS)["spec"]["volumeName"]
        image = node.pool / "volumes" / f"{handle}.img"
        dev = host.loop_dev(host.loop_of(image))
        staging = next(m["path"] for m in host.mounts(node.kubelet)
                       if m["dev"] == dev and m["path"].endswith("/globalmount"))
        holder = subprocess.Popen(["sleep", "infinity"], cwd=staging)
        try:
            self.c.kubectl("delete", "pod", "app-in-use", "-n", NS, "--wait=true", "--timeout=120s")
            self.c.kubectl("delete", "pvc", "in-use", "-n", NS, "--wait=true", "--timeout=120s")

            def refused():
                # (an ABORTED before it, while another call on the volume runs, is a retry's business)
                return [e["message"] for e in self.c.items("events", "-A", "--field-selector",
                                                            f"involvedObject.name={pv_name}")
                        if e.get("reason") == "VolumeFailedDelete" and "FailedPrecondition" in e["message"]]
            messages = wait_for(f"DeleteVolume of {handle} refused while staged", refused, RECONCILED)
            assert any("FailedPrecondition" in m and f"in use on node {node.name}" in m and staging in m
                       for m in messages), f"{pv_name}'s delete failures: {messages}"
            assert image.is_file(), f"{handle}'s image deleted while staged"
            assert self.c.get("pv", pv_name), f"{pv_name} deleted while its volume was staged"
        finally:
            holder.kill()
            holder.wait()
        wait_for(f"kubelet unstaged {handle}", lambda: not host.loop_of(image)
                 and not [m for m in host.mounts(node.kubelet) if m["dev"] == dev], ON_HOST)
        wait_for(f"{pv_name} deleted", lambda: not self.c.get("pv", pv_name), RECONCILED)
        assert not image.exists(), f"{handle}'s image left in the pool"

    # ---- moving a StatefulSet's volume between nodes ----------------------------------------

    def move(self, *args, background=False):
        """kubectl blockpool move with the given arguments, as the cluster's admin."""
        argv = [self.kubectl_blockpool, "move", *args, "--kubeconfig", self.c.admin, "--timeout", f"{RECONCILED}s"]
        env = {**os.environ, "KUBECTL_BLOCKPOOL_EXEC": str(cl.REPO / "e2e" / "node_exec.py"),
               "BLOCKPOOL_E2E_NODE_EXEC": str(self.node_exec)}
        log = open(self.c.logs / "kubectl-blockpool.log", "a")  # noqa: SIM115 - closed by the caller's wait
        log.write("$ " + " ".join(map(str, argv)) + "\n")
        log.flush()
        p = subprocess.Popen([str(a) for a in argv], stdout=log, stderr=subprocess.STDOUT, env=env)
        if background:
            return p
        code = p.wait(timeout=5 * RECONCILED)
        assert code == 0, f"kubectl blockpool move {' '.join(args)}: exit {code} (logs/kubectl-blockpool.log)"

    def pv_of(self, claim):
        return self.c.get("pv", self.c.get("pvc", claim, "-n", NS)["spec"]["volumeName"])

    def moves_a_statefulset(self):
        """kubectl blockpool move of a StatefulSet's claim from node a to node b while its pod
        writes, each write fsync'd before it counts: the first run is cut by node a's driver
        killed in the middle of the copy, which leaves the volume and its pod on node a as they
        were; the same command run again (the driver back) finishes the move, re-creating the
        PersistentVolume on node b (--repoint recreate: a cluster without MutablePVNodeAffinity),
        and the pod, started again on node b, finds every acknowledged write."""
        a, b = self.nodes["e2e-node-a"], self.nodes["e2e-node-b"]
        self.c.kubectl("cordon", b.name)  # the StatefulSet's pod starts on node a
        try:
            self.c.apply(stateful_set("web", "data"))
            self.placed("data-web-0", a.name)
            publish = self.publish_dir("web-0", a.name)
        finally:
            self.c.kubectl("uncordon", b.name)
        handle, _, _ = self.bound("data-web-0")
        pv_uid = self.pv_of("data-web-0")["metadata"]["uid"]
        bulk = os.urandom(256 << 20)  # enough that the copy is under way when node a's driver dies
        with open(publish / "bulk", "wb") as f:
            f.write(bulk)
            os.fsync(f.fileno())
        pod_uid = self.c.get("pod", "web-0", "-n", NS)["metadata"]["uid"]

        def stopping():  # the pod being deleted, or gone (a grace period of 0 s)
            p = self.c.get("pod", "web-0", "-n", NS)
            return not p or p["metadata"]["uid"] != pod_uid or p["metadata"].get("deletionTimestamp")
        writer = AcknowledgedWriter(publish / "journal", stopping)
        writer.start()
        try:
            first = self.move("data-web-0", "-n", NS, "--to", b.name, "--repoint", "recreate",
                              "--until-below", "1", "--rounds", "100", background=True)
            incoming = b.pool / "incoming" / f"{handle}.img"
            wait_for("node b copying the volume", lambda: incoming.exists() or first.poll() is not None, ON_HOST,
                     interval=0.05)
            a.kill_driver()
            assert first.wait(timeout=RECONCILED) != 0, "the move went on without node a's driver"
            assert self.pv_of("data-web-0")["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0][
                "matchExpressions"][0]["values"] == [a.name], "the cut move re-pointed the volume"
            assert f"{handle}.img" in a.images(), "the cut move took the volume from node a's pool"
            acked = writer.acknowledged
            wait_for("the pod on node a still writing to its volume", lambda: writer.acknowledged > acked, ON_HOST)
            a.restart_driver()
            self.move("data-web-0", "-n", NS, "--to", b.name, "--repoint", "recreate")
        finally:
            writer.stop()
        assert writer.error is None, f"a write failed before the pod was stopped: {writer.error}"
        self.placed("data-web-0", b.name)
        assert self.pv_of("data-web-0")["metadata"]["uid"] != pv_uid, "the PersistentVolume was not re-created"
        moved = self.publish_dir("web-0", b.name)
        assert (moved / "bulk").read_bytes() == bulk, "the bulk data differs on node b"
        writer.check(moved / "journal")
        print(f"        {writer.acknowledged} writes acknowledged on node a, every one read back on node b")
        self.no_transfer_left()

    def moves_every_volume_off_a_node(self):
        """kubectl blockpool move --all-from node b --to node a: the StatefulSet's volume goes back,
        its PersistentVolume re-pointed in place (this cluster's API server enables
        MutablePVNodeAffinity), and the pod on node a reads what it wrote."""
        a, b = self.nodes["e2e-node-a"], self.nodes["e2e-node-b"]
        journal = (self.publish_dir("web-0", b.name) / "journal").read_bytes()
        pv_uid = self.pv_of("data-web-0")["metadata"]["uid"]
        self.move("--all-from", b.name, "--to", a.name)
        self.placed("data-web-0", a.name)
        assert self.pv_of("data-web-0")["metadata"]["uid"] == pv_uid, "the PersistentVolume was re-created"
        assert (self.publish_dir("web-0", a.name) / "journal").read_bytes() == journal
        self.no_transfer_left()
        self.c.kubectl("delete", "statefulset", "web", "-n", NS, "--wait=true", "--timeout=120s")
        self.c.kubectl("delete", "pvc", "data-web-0", "-n", NS, "--wait=true", "--timeout=120s")
        wait_for("every PV deleted", lambda: not self.c.items("pv"), RECONCILED)
        for node in self.nodes.values():
            wait_for(f"{node.name}'s pool empty", lambda n=node: not n.images(), ON_HOST)

    def no_transfer_left(self):
        for n in self.nodes.values():
            left = sorted(p.name for d in ("incoming", "outgoing") for p in (n.pool / d).glob("*.img"))
            assert not left, f"{n.name}: transfer images left: {left}"

    def cleanup(self):
        """The pods, snapshots and claims deleted at once, without waiting for kubelet to let go of
        the volumes: a PV's DeleteVolume answers FAILED_PRECONDITION while its volume is still
        staged on its node, and csi-provisioner retries it until kubelet has unstaged it."""
        self.c.kubectl("delete", "pod", "--all", "-n", NS, "--wait=false")
        self.c.kubectl("delete", "volumesnapshot", "--all", "-n", NS, "--wait=true", "--timeout=120s")
        self.c.kubectl("delete", "pvc", "--all", "-n", NS, "--wait=true", "--timeout=120s")
        for node in self.nodes.values():
            wait_for(f"kubelet on {node.name} unpublished and unstaged every volume, their loop devices detached",
                     lambda n=node: not [m for m in host.mounts(n.kubelet) if "csi" in m["path"]]
                     and not host.loops(n.pool), ON_HOST)
        wait_for("every PV deleted", lambda: not self.c.items("pv"), RECONCILED)
        wait_for("every VolumeSnapshotContent deleted", lambda: not self.c.items("volumesnapshotcontents"), RECONCILED)
        for node in self.nodes.values():
            wait_for(f"{node.name}'s pool empty", lambda n=node: host.pool_records(n.pool) == {
                "volumes": [], "snapshots": [], "groups": []}, ON_HOST)


    def no_rbac_denials(self):
        denied = [f"{p.name}: {line.strip()[:300]}" for p in self.c.procs
                  if any(p.name.startswith(s) for s in NODE_SIDECARS)
                  for line in (self.c.logs / f"{p.name}.log").read_text(errors="replace").splitlines()
                  if "forbidden" in line.lower()]
        assert not denied, "RBAC denials:\n" + "\n".join(denied[:10])
        self.c.check_alive()
