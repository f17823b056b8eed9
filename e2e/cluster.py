"""The end-to-end test's cluster on this host, all in one temporary directory: etcd, the
control plane, snapshot-controller, the project's manifests, the driver and its sidecars as
host processes run with the arguments the rendered manifests give them, and a hollow kubelet
as the node. Everything started here is stopped, unmounted and detached by teardown()."""

import ipaddress
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import yaml

import host

REPO = Path(__file__).resolve().parent.parent
BIN = REPO / ".cache" / "e2e" / "bin"
CRDS = REPO / ".cache" / "e2e" / "crd"
SNAPSHOT_CRDS = ("volumesnapshots", "volumesnapshotcontents", "volumesnapshotclasses")
GROUP_SNAPSHOT_CRDS = ("volumegroupsnapshots", "volumegroupsnapshotcontents", "volumegroupsnapshotclasses")
GROUP_SNAPSHOT_GATE = "--feature-gates=CSIVolumeGroupSnapshot=true"
DRIVER = REPO / "bin" / "blockpool-csi"
# The layout the flows run: a pool every node shares (here, the one node's directory).
SHARED_LAYOUT = "sidecars-deploy/overlays/shared-pool"
FLEXVOLUME = REPO / "bin" / "blockpool-flexvolume"
NAMESPACE = "blockpool-system"
DRIVER_NAME = "blockpool.csi.dev"
NODE = "e2e-node"
DISTRIBUTED_SNAPSHOTS = "--enable-distributed-snapshotting"

# The controller pod's sidecars the test runs, each built as a binary of the container's name.
# The livenessprobe container is not run here: it listens on a fixed port (--health-port) of every
# address, which runs side by side would share; the test waits on what the sidecars' own liveness
# probes check instead, and the real node runs it in its pod (real_node.py).
SIDECARS = ["csi-provisioner", "csi-attacher", "csi-snapshotter", "csi-resizer"]
# The sidecars e2e/build-upstream.sh builds, by binary: their modules and tags.
UPSTREAM_SIDECARS = REPO / "e2e" / "upstream-sidecars.txt"

# Where the manifests put things on a node, and where they are in this test instead.
MANIFEST_POOL = "/var/lib/blockpool"
MANIFEST_KUBELET = "/var/lib/kubelet"


def pvc(name, storage_class, size, block=False, source=None, namespace="default"):
    """A PersistentVolumeClaim of the class, ReadWriteOnce; raw block, or from a data source, when asked."""
    spec = {"storageClassName": storage_class, "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}}}
    if block:
        spec["volumeMode"] = "Block"
    if source:
        spec["dataSource"] = source
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": namespace},
            "spec": spec}


def quantity(q):
    """Bytes of a Kubernetes quantity as the API writes them (e.g. "2Gi", "78000Mi", "1234")."""
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50,
             "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}
    for suffix, factor in units.items():
        if q.endswith(suffix):
            return int(float(q[:-len(suffix)]) * factor)
    return int(q)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tcp_open(host, port):
    """Whether something accepts connections at host:port."""
    try:
        with socket.create_connection((host, port), timeout=5):
            return True
    except OSError:
        return False


def http_ok(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


# How long a wait may take at most: what its kind of step needs on a loaded 2-core machine, with
# room to spare (a run prints its longest waits against these, to keep them honest). A step that
# fails ends the run within about this long, named; the flows after it are not run.
STARTED = 60      # a process up and answering: kube-apiserver ready, the node Ready, a sidecar leading
RECONCILED = 60   # controllers acting on an object: a claim bound, an attachment, a snapshot ready, a deletion
POD = 90          # a pod Running: its claim provisioned, attached, staged and published on the way
ON_HOST = 30      # the driver's work seen on the host once the API shows it: a device released, a filesystem grown
SCHEDULER = 90    # the scheduler's retry of a pod it could not place, which backs off
KUBECTL = 30      # one request of kubectl to kube-apiserver (--request-timeout)

# Every wait of the run: (seconds it took, its bound, what), for the summary.
WAITS = []


def wait_for(what, check, timeout, interval=0.5, alive=lambda: None):
    """Polls check() until it returns something truthy, for at most `timeout` seconds; raises
    with the last answer otherwise. alive() raises when a process the wait depends on has exited,
    which ends the wait at once instead of at its timeout."""
    start = time.monotonic()
    last = None
    while True:
        try:
            last = check()
            if last:
                WAITS.append((time.monotonic() - start, timeout, what))
                return last
        except subprocess.CalledProcessError as e:
            last = (e.stderr or e.stdout or str(e)).strip()
        alive()
        if time.monotonic() - start > timeout:
            WAITS.append((time.monotonic() - start, timeout, what))
            raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")
        time.sleep(interval)


def longest_waits(n=5):
    """The run's longest waits, each against its bound."""
    return [f"{took:.0f} s of {bound} s for {what}" for took, bound, what in sorted(WAITS, reverse=True)[:n]]


class KubectlError(subprocess.CalledProcessError):
    """A failed kubectl, saying what kubectl said."""

    def __str__(self):
        return f"{super().__str__()}: {(self.stderr or self.stdout or '').strip()[:600]}"


class Proc:
    """A host process with its own log file, in its own process group so it can be stopped whole."""

    def __init__(self, name, argv, logs, env=None, cwd=None):
        self.name = name
        self.argv, self.env, self.cwd = argv, env, cwd  # to start it again as kubelet restarts a container
        self.log_path = logs / f"{name}.log"
        self.log = open(self.log_path, "w")  # noqa: SIM115 - open while the process runs; stop() closes it
        self.log.write("$ " + " ".join(map(str, argv)) + "\n")
        self.log.flush()
        self.popen = subprocess.Popen([str(a) for a in argv], stdout=self.log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})},
                                      cwd=cwd, start_new_session=True)

    def alive(self):
        return self.popen.poll() is None

    def stop(self, grace=15):
        if self.alive():
            os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()
        self.log.close()


class Cluster:
    def __init__(self, work: Path):
        self.work = work
        self.logs = work / "logs"
        self.pki = work / "pki"
        self.pool = work / "pool"
        self.kubelet = work / "kubelet"
        self.procs = []
        for d in (self.logs, self.pki, self.pool, self.kubelet):
            d.mkdir(parents=True, exist_ok=True)
        self.admin = work / "admin.kubeconfig"
        self.apiserver_port = free_port()
        self.server = f"https://127.0.0.1:{self.apiserver_port}"
        # The Services' addresses; the first is the `kubernetes` Service's, which pods use.
        self.service_range = ipaddress.ip_network("10.0.0.0/24")

    # ---- helpers -----------------------------------------------------------------------

    def start(self, name, argv, **kw):
        p = Proc(name, argv, self.logs, **kw)
        self.procs.append(p)
        return p

    def wait_for(self, what, check, timeout):
        """wait_for, ended at once when a process of the cluster has exited."""
        return wait_for(what, check, timeout, alive=self.check_alive)

    def kubectl(self, *args, input=None, check=True, kubeconfig=None):
        r = subprocess.run([str(BIN / "kubectl"), "--kubeconfig", str(kubeconfig or self.admin),
                            f"--request-timeout={KUBECTL}s", *map(str, args)],
                           input=input, capture_output=True, text=True, check=False)
        if check and r.returncode != 0:
            raise KubectlError(r.returncode, ["kubectl", *map(str, args)], r.stdout, r.stderr)
        return r.stdout

    def get(self, *args, check=True):
        """kubectl get ... -o json, parsed; None when the object does not exist."""
        out = self.kubectl("get", *args, "-o", "json", "--ignore-not-found", check=check)
        return json.loads(out) if out.strip() else None

    def items(self, *args):
        """kubectl get KIND ... -o json: the list's items."""
        return json.loads(self.kubectl("get", *args, "-o", "json"))["items"]

    def watch(self, *args):
        """Starts kubectl get --watch; the returned function stops it and returns every version seen."""
        p = subprocess.Popen([str(BIN / "kubectl"), "--kubeconfig", str(self.admin), "get", *map(str, args),
                              "--watch", "-o", "json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

        def stop():
            p.terminate()
            out, _ = p.communicate()
            decoder, seen, i = json.JSONDecoder(), [], 0
            while (i := out.find("{", i)) >= 0:
                obj, i = decoder.raw_decode(out, i)
                seen.append(obj)
            return seen
        return stop

    def apply(self, manifest):
        return self.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(manifest if isinstance(manifest, list)
                                                                          else [manifest]))

    def openssl(self, *args):
        subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True, cwd=self.pki)

    def kubeconfig(self, path, user):
        """A kubeconfig for this cluster; user: {"client-certificate":..., "client-key":...} or {"token":...}."""
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "e2e", "cluster": {"server": self.server,
                                                     "certificate-authority": str(self.pki / "ca.crt")}}],
            "users": [{"name": "u", "user": user}],
            "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "u"}}],
            "current-context": "e2e"}))
        path.chmod(0o600)
        return path

    def cert_kubeconfig(self, name, cn, org=None):
        subj = f"/CN={cn}" + (f"/O={org}" if org else "")
        self.openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                     "-subj", subj)
        self.openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                     "-days", "2", "-out", f"{name}.crt")
        return self.kubeconfig(self.work / f"{name}.kubeconfig", {"client-certificate": str(self.pki / f"{name}.crt"),
                                                                  "client-key": str(self.pki / f"{name}.key")})

    # ---- control plane -----------------------------------------------------------------

    def make_pki(self):
        self.openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
                     "-days", "2", "-subj", "/CN=blockpool-e2e-ca")
        (self.pki / "apiserver.ext").write_text(
            f"subjectAltName=IP:127.0.0.1,IP:{next(self.service_range.hosts())},DNS:localhost,DNS:kubernetes,"
            "DNS:kubernetes.default.svc\n")
        self.openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", "apiserver.key", "-out",
                     "apiserver.csr", "-subj", "/CN=kube-apiserver")
        self.openssl("x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                     "-days", "2", "-extfile", "apiserver.ext", "-out", "apiserver.crt")
        # Signs and verifies service-account tokens (the sidecars' tokens, kube-controller-manager's controllers).
        self.openssl("genrsa", "-out", "sa.key", "2048")
        self.openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub")
        self.cert_kubeconfig("admin", "e2e-admin", "system:masters")  # -> self.admin

    def start_control_plane(self, feature_gates=()):
        """etcd, kube-apiserver (with `feature_gates`, "Name=true" each), kube-controller-manager
        and kube-scheduler."""
        self.make_pki()
        etcd_port, peer_port = free_port(), free_port()
        etcd_url = f"http://127.0.0.1:{etcd_port}"
        self.start("etcd", [BIN / "etcd", "--data-dir", self.work / "etcd", "--name", "e2e",
                            "--listen-client-urls", etcd_url, "--advertise-client-urls", etcd_url,
                            "--listen-peer-urls", f"http://127.0.0.1:{peer_port}",
                            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer_port}",
                            "--initial-cluster", f"e2e=http://127.0.0.1:{peer_port}",
                            # a throwaway cluster: no need to wait for the disk on every write
                            "--unsafe-no-fsync", "--log-level", "warn"])
        pki = self.pki
        self.start("kube-apiserver", [
            BIN / "kube-apiserver", "--etcd-servers", etcd_url,
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
            "--secure-port", self.apiserver_port,
            "--tls-cert-file", pki / "apiserver.crt", "--tls-private-key-file", pki / "apiserver.key",
            "--client-ca-file", pki / "ca.crt",
            "--authorization-mode", "Node,RBAC",
            "--enable-admission-plugins", "NodeRestriction",
            # the node plugin is privileged
            "--allow-privileged=true",
            # node names here resolve nowhere: reach a kubelet (logs, exec) at its node IP
            "--kubelet-preferred-address-types=InternalIP,Hostname",
            "--service-account-issuer", "https://kubernetes.default.svc",
            "--service-account-key-file", pki / "sa.pub",
            "--service-account-signing-key-file", pki / "sa.key",
            "--api-audiences", "https://kubernetes.default.svc",
            "--service-cluster-ip-range", self.service_range,
            *([f"--feature-gates={','.join(feature_gates)}"] if feature_gates else []),
            "--cert-dir", self.work / "apiserver-certs"])
        self.wait_for("kube-apiserver ready", lambda: self.kubectl("get", "--raw", "/readyz").strip() == "ok", STARTED)

        kcm = self.cert_kubeconfig("kube-controller-manager", "system:kube-controller-manager")
        self.start("kube-controller-manager", [
            BIN / "kube-controller-manager", "--kubeconfig", kcm,
            "--authentication-kubeconfig", kcm, "--authorization-kubeconfig", kcm,
            "--bind-address", "127.0.0.1", "--secure-port", free_port(),
            "--cert-dir", self.work / "kcm-certs",
            # every default controller: the PV binder, attach-detach, expander, PVC/PV protection,
            # garbage collector, service accounts, deployments, daemon sets, ...
            "--controllers", "*",
            "--use-service-account-credentials",
            "--service-account-private-key-file", pki / "sa.key", "--root-ca-file", pki / "ca.crt",
            "--leader-elect=false"])
        sched = self.cert_kubeconfig("kube-scheduler", "system:kube-scheduler")
        self.start("kube-scheduler", [
            BIN / "kube-scheduler", "--kubeconfig", sched,
            "--authentication-kubeconfig", sched, "--authorization-kubeconfig", sched,
            "--bind-address", "127.0.0.1", "--secure-port", free_port(),
            "--cert-dir", self.work / "scheduler-certs", "--leader-elect=false"])

        # Volume snapshots: the VolumeSnapshot CRDs from the external-snapshotter client module
        # and the cluster-wide snapshot-controller, which a cluster provides beside the driver.
        # Only those, as many distributions ship them: the base must snapshot there. The group
        # snapshot CRDs come later, with enable_group_snapshots().
        self.install_crds("snapshot.storage.k8s.io", SNAPSHOT_CRDS)
        # Distributed snapshotting labels the contents of node-local volumes with their node (for
        # the csi-snapshotter on that node) and leaves a shared pool's, which have no node, alone.
        self.snapshot_controller = self.start("snapshot-controller", [
            BIN / "snapshot-controller", "--kubeconfig", self.admin, "--leader-election=false",
            DISTRIBUTED_SNAPSHOTS])
        self.wait_for("the default service account", lambda: self.get("serviceaccount", "default", "-n", "default"),
                      STARTED)

    def install_crds(self, group, plurals):
        self.kubectl("apply", *(a for p in plurals for a in ("-f", CRDS / f"{group}_{p}.yaml")))
        for p in plurals:
            self.kubectl("wait", "--for=condition=Established", f"crd/{p}.{group}", f"--timeout={RECONCILED}s")

    def has_group_snapshot_crds(self):
        return bool(self.get("crd", f"{GROUP_SNAPSHOT_CRDS[0]}.groupsnapshot.storage.k8s.io"))

    # ---- the project's manifests -------------------------------------------------------

    def render(self, kustomization):
        return [d for d in yaml.safe_load_all(self.kubectl("kustomize", REPO / kustomization)) if d]

    def workload(self, docs, kind, name):
        return next(d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name)

    def container_command(self, workload, container, pod_name, host_paths, ports, node=NODE):
        """The container's args with its $(VAR)s expanded as kubelet does, and every path it names
        inside the container translated to this test's host: through the pod's volume mounts to
        the volume's host path, then from the manifest's host directories into the temp dir.
        --http-endpoint ports are moved to free ports on 127.0.0.1, a --peer-listen that is not
        empty to the port `ports` holds for "<container>:peer"."""
        spec = workload["spec"]["template"]["spec"]
        c = next(c for c in spec["containers"] if c["name"] == container)
        env = {}
        for e in c.get("env", []):
            if "value" in e:
                env[e["name"]] = e["value"]
            else:
                field = e["valueFrom"]["fieldRef"]["fieldPath"]
                env[e["name"]] = {"metadata.namespace": NAMESPACE, "metadata.name": pod_name,
                                  "spec.nodeName": node}[field]
        volumes = {v["name"]: v for v in spec.get("volumes", [])}

        def to_host(value):
            for m in sorted(c.get("volumeMounts", []), key=lambda m: -len(m["mountPath"])):
                mp = m["mountPath"]
                if value == mp or value.startswith(mp + "/"):
                    vol = volumes[m["name"]]
                    base = vol["hostPath"]["path"] if "hostPath" in vol else str(host_paths["emptyDir:" + m["name"]])
                    value = base + value[len(mp):]
                    break
            for manifest_dir, test_dir in host_paths.items():
                if not manifest_dir.startswith("emptyDir:") and (value == manifest_dir
                                                                 or value.startswith(manifest_dir + "/")):
                    return str(test_dir) + value[len(manifest_dir):]
            return value

        args = []
        for a in c.get("args", []):
            for k, v in env.items():
                a = a.replace(f"$({k})", v)
            flag, eq, value = a.partition("=")
            if eq and flag == "--http-endpoint":
                port = free_port()
                ports[container] = port
                value = f"127.0.0.1:{port}"
            elif eq and flag == "--peer-listen" and value:
                # the node's peer channel, on the port the test chose for it
                value = f"127.0.0.1:{ports[container + ':peer']}"
            elif eq and value.startswith("unix://"):
                value = "unix://" + to_host(value[len("unix://"):])
            elif eq:
                value = to_host(value)
            args.append(flag + eq + value)
        return args, env, to_host

    def apply_manifests(self):
        """kubectl apply -k of the shared pool's layout, and server-side dry runs of the other
        variants and the examples (but for the group snapshot example, whose kinds this cluster
        does not know yet). The CSIDriver of the node-local layout is left out of its dry runs: its
        attachRequired differs, and the field cannot change on an existing CSIDriver."""
        self.kubectl("apply", "-k", REPO / SHARED_LAYOUT)
        for overlay in ("sidecars-deploy/overlays/nfs-pool", "sidecars-deploy/overlays/glusterfs-pool",
                        "sidecars-deploy/overlays/group-snapshots"):
            self.kubectl("apply", "--dry-run=server", "-k", REPO / overlay)
        for variant in ("sidecars-deploy/base", "sidecars-deploy/overlays/dev", "sidecars-deploy/overlays/flexvolume"):
            docs = [d for d in self.render(variant) if d["kind"] != "CSIDriver"]
            self.kubectl("apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump_all(docs))
        examples = [d for d in self.render("sidecars-deploy/examples")
                    if not d["apiVersion"].startswith("groupsnapshot.storage.k8s.io/")]
        self.kubectl("apply", "--dry-run=server", "-n", "default", "-f", "-", input=yaml.safe_dump_all(examples))

    # ---- the node: hollow kubelet, driver in node mode, registrar ----------------------

    def start_node(self):
        docs = self.render(SHARED_LAYOUT)
        ds = self.workload(docs, "DaemonSet", "blockpool-node")
        host_paths = {MANIFEST_KUBELET: self.kubelet, MANIFEST_POOL: self.pool}
        ports = {}
        args, _env, _to_host = self.container_command(ds, "blockpool", "blockpool-node-e2e", host_paths, ports)
        endpoint = next(a.partition("=")[2] for a in args if a.startswith("--endpoint="))
        self.install_flexvolume(endpoint)
        node_kc = self.cert_kubeconfig("node", f"system:node:{NODE}", "system:nodes")
        self.kubelet_port = free_port()
        self.start("kubelet", [BIN / "hollow-node", "--kubeconfig", node_kc, "--node-name", NODE,
                               "--root-dir", self.kubelet, "--port", self.kubelet_port,
                               "--volume-plugin-dir", self.volume_plugins, "--v=2"])
        plugin_dir = self.kubelet / "plugins" / DRIVER_NAME
        plugin_dir.mkdir(parents=True, exist_ok=True)
        (self.work / "node-driver").mkdir(exist_ok=True)
        self.start("driver-node", [DRIVER, *args], cwd=self.work / "node-driver")
        reg_args, _, reg_to_host = self.container_command(ds, "node-driver-registrar", "blockpool-node-e2e",
                                                          host_paths, ports)
        # node-driver-registrar's default --plugin-registration-path, as the container sees it
        reg_args.append("--plugin-registration-path=" + reg_to_host("/registration"))
        (self.kubelet / "plugins_registry").mkdir(parents=True, exist_ok=True)
        self.check_sidecar_versions(ds["spec"]["template"]["spec"])
        self.start("registrar", [BIN / "csi-node-driver-registrar", *reg_args])
        self.node_ports = ports

        def registered():
            csinode = self.get("csinode", NODE)
            return csinode and any(d["name"] == DRIVER_NAME for d in csinode["spec"].get("drivers") or [])
        self.wait_for("node Ready", lambda: self.kubectl(
            "get", "node", NODE, "-o", "jsonpath={.status.conditions[?(@.type=='Ready')].status}") == "True",
            STARTED)
        self.wait_for("kubelet registered the driver (CSINode)", registered, STARTED)
        # What the registrar's liveness probe asks: its registration socket answers kubelet's GetInfo.
        self.wait_for("node-driver-registrar's /healthz answers 200", lambda: http_ok(
            f"http://127.0.0.1:{ports['node-driver-registrar']}/healthz"), STARTED)

    def install_flexvolume(self, endpoint):
        """blockpool's FlexVolume driver in kubelet's plugin directory (here in the temp dir), as
        the flexvolume overlay installs it: kubelet runs <dir>/blockpool.csi.dev~blockpool/blockpool.
        The overlay's copy finds the node plugin's socket at the manifests' host path; this one is
        told the test's through CSI_ENDPOINT, by a script, since kubelet passes no environment
        of its own to a driver."""
        self.volume_plugins = self.work / "volume-plugins"
        driver_dir = self.volume_plugins / "blockpool.csi.dev~blockpool"
        driver_dir.mkdir(parents=True)
        script = driver_dir / "blockpool"
        script.write_text("#!/usr/bin/env bash\n"
                          f"export CSI_ENDPOINT={shlex.quote(endpoint)}\n"
                          f"exec {shlex.quote(str(FLEXVOLUME))} \"$@\"\n")
        script.chmod(0o755)

    # ---- the controller: driver in controller mode and the sidecars --------------------

    def start_controller(self):
        # The Deployment's pod runs on the hollow node (fake containers): its name is the
        # POD_NAME the provisioner resolves to its ReplicaSet and Deployment for the owner of
        # the CSIStorageCapacity objects (--capacity-ownerref-level=2).
        def controller_pod():
            pods = self.items("pods", "-n", NAMESPACE, "-l", "app.kubernetes.io/name=blockpool-controller")
            return pods[0]["metadata"]["name"] if pods else None
        pod_name = self.wait_for("the controller Deployment's pod", controller_pod, RECONCILED)
        docs = self.render(SHARED_LAYOUT)
        dep = self.workload(docs, "Deployment", "blockpool-controller")
        socket_dir = self.work / "controller-csi"
        socket_dir.mkdir(exist_ok=True)
        host_paths = {"emptyDir:socket-dir": socket_dir, MANIFEST_POOL: self.pool}
        self.controller_pod, self.controller_host_paths = pod_name, host_paths
        self.ports = {}
        args, _, _ = self.container_command(dep, "blockpool", pod_name, host_paths, self.ports)
        (self.work / "controller-driver").mkdir(exist_ok=True)
        self.start("driver-controller", [DRIVER, *args], cwd=self.work / "controller-driver")

        # Each sidecar under a token of the manifests' ServiceAccount, as in the pod.
        token = self.kubectl("create", "token", "blockpool-controller", "-n", NAMESPACE, "--duration=2h").strip()
        sa_kc = self.kubeconfig(self.work / "blockpool-controller.kubeconfig", {"token": token})
        self.sa_kubeconfig = sa_kc
        spec = dep["spec"]["template"]["spec"]
        self.check_sidecar_versions(spec)
        unknown = [c["name"] for c in spec["containers"] if c["name"] not in SIDECARS
                   and c["name"] not in ("blockpool", "liveness-probe")]
        assert not unknown, f"the controller pod has containers the test does not run: {unknown}"
        self.sidecars = {}  # container name -> its process
        for name in SIDECARS:
            self.sidecars[name] = self.start_sidecar(dep, name)
        assert GROUP_SNAPSHOT_GATE not in self.sidecars["csi-snapshotter"].popen.args, \
            "the base's csi-snapshotter runs with group snapshots on"
        # What the pod's liveness probes check: each sidecar leads (or the probe fails).
        for name in SIDECARS:
            self.wait_leading(name)

    def start_sidecar(self, dep, name, log_name=None):
        """The Deployment's container `name` as a host process, under the ServiceAccount's token."""
        args, env, _ = self.container_command(dep, name, self.controller_pod, self.controller_host_paths, self.ports)
        # In the pod the service-account mount tells the sidecars their namespace (their
        # leader-election Leases live there); out of the pod, POD_NAMESPACE does.
        return self.start(log_name or name, [BIN / name, *args, f"--kubeconfig={self.sa_kubeconfig}"],
                          env={**env, "POD_NAMESPACE": NAMESPACE})

    def wait_leading(self, name):
        port = self.ports[name]
        self.wait_for(f"{name} leading (/healthz/leader-election)",
                      lambda: http_ok(f"http://127.0.0.1:{port}/healthz/leader-election"), STARTED)

    def stop(self, proc):
        """Stops one process for good: it is no longer expected alive (its log stays)."""
        proc.stop()
        self.procs.remove(proc)

    def enable_group_snapshots(self):
        """What a cluster admin does to opt in to group snapshots (docs/deploy.md): the group
        snapshot CRDs, snapshot-controller restarted with their gate, and kubectl apply -k of
        overlays/group-snapshots; csi-snapshotter then runs with the overlay's arguments (its
        pod would be replaced by the Deployment's rollout) under the overlay's RBAC."""
        assert not self.has_group_snapshot_crds(), "the group snapshot CRDs are there before the opt-in"
        self.install_crds("groupsnapshot.storage.k8s.io", GROUP_SNAPSHOT_CRDS)
        self.stop(self.snapshot_controller)
        self.snapshot_controller = self.start("snapshot-controller.group-snapshots", [
            BIN / "snapshot-controller", "--kubeconfig", self.admin, "--leader-election=false",
            DISTRIBUTED_SNAPSHOTS, GROUP_SNAPSHOT_GATE])
        self.kubectl("apply", "-k", REPO / "sidecars-deploy/overlays/group-snapshots")
        dep = self.workload(self.render("sidecars-deploy/overlays/group-snapshots"), "Deployment",
                            "blockpool-controller")
        self.stop(self.sidecars["csi-snapshotter"])
        snapshotter = self.start_sidecar(dep, "csi-snapshotter", log_name="csi-snapshotter.group-snapshots")
        self.sidecars["csi-snapshotter.group-snapshots"] = snapshotter
        assert GROUP_SNAPSHOT_GATE in snapshotter.popen.args, \
            f"overlays/group-snapshots runs csi-snapshotter without {GROUP_SNAPSHOT_GATE}"
        self.wait_leading("csi-snapshotter")

    def check_sidecar_versions(self, spec):
        """The sidecars built for the test are the versions the pod's images carry, except where
        the Go module proxy does not serve that version (e2e/README.md)."""
        pins = [line.split() for line in UPSTREAM_SIDECARS.read_text().splitlines()
                if line.strip() and not line.startswith("#")]
        upstream = {binary: tag for binary, _module, tag, *_ in pins}
        for c in spec["containers"]:
            image, _, tag = c["image"].rpartition(":")
            binary = image.rpartition("/")[2]
            assert upstream.get(binary, tag) == tag, \
                f"{c['name']}: the manifests deploy {tag}, {UPSTREAM_SIDECARS.name} builds {upstream[binary]}"
        go_mod = (REPO / "e2e" / "go.mod").read_text()
        modules = {"csi-provisioner": "external-provisioner/v6", "csi-attacher": "external-attacher/v4",
                   "csi-snapshotter": "external-snapshotter/v8", "csi-resizer": "external-resizer/v2",
                   "csi-snapshot-metadata": "external-snapshot-metadata"}
        not_served = {("csi-resizer", "v2.2.1"): "v2.2.0"}
        for c in spec["containers"]:
            if c["name"] not in modules:
                continue
            tag = c["image"].rpartition(":")[2]
            built = re.search(rf"github.com/kubernetes-csi/{modules[c['name']]} (v\S+)", go_mod).group(1)
            assert built == tag or not_served.get((c["name"], tag)) == built, \
                f"{c['name']}: the manifests deploy {tag}, e2e/go.mod builds {built}"

    # ---- teardown ----------------------------------------------------------------------

    def check_alive(self):
        dead = [f"{p.name} (exit {p.popen.returncode})" for p in self.procs if not p.alive()]
        assert not dead, "processes exited: " + ", ".join(dead)

    def teardown(self):
        """Stops every process (the newest first), then unmounts whatever is still mounted under
        the temp dir and detaches the loop devices backed by files in it."""
        for p in reversed(self.procs):
            try:
                p.stop()
            except Exception as e:  # noqa: BLE001 - keep tearing down
                print(f"e2e: stopping {p.name}: {e}")
        return host.release_everything_under(self.work)
