"""A real node beside the e2e's control plane: containerd (its own root, state and socket in the
run's temp dir), runc, the CNI bridge plugin and a real kubelet, all built by e2e/build.sh and
e2e/node/build.sh, running images built by e2e/node/images.sh without a registry. containerd and
kubelet, and so every container, run in a mount namespace of the run's own, where the run's
directories are mounted over /var/lib and /var/log, and so at the host paths the manifests name
(/var/lib/kubelet, /var/lib/blockpool): nothing mounted there reaches the host's mount table.
Everything started here is stopped, unmounted and removed by teardown(), which runs even when
start() failed half way. See e2e/README.md, "The real node", for what is set and why."""

import contextlib
import fcntl
import hashlib
import ipaddress
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
from pathlib import Path

import yaml

import host
from cluster import BIN, REPO, STARTED, free_port, wait_for

NODE_BIN = REPO / ".cache" / "e2e" / "node" / "bin"
CNI_BIN = REPO / ".cache" / "e2e" / "node" / "cni"
IMAGES = REPO / ".cache" / "e2e" / "node" / "images"
REAL_NODE = "e2e-real-node"
K8S_NAMESPACE = "k8s.io"  # containerd's namespace for the CRI's images and containers

# What kubelet sets on the host at start unless these already hold (its kernel tunables). The
# first real node on the machine records the values before it, the last one to stop puts them
# back: SYSCTL_RECORD holds them, one file per running node named by its pid, and the lock.
KUBELET_SYSCTLS = ("vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
                   "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes")
SYSCTL_RECORD = Path("/run/blockpool-e2e-real-node")
CGROUP_ROOT = Path("/sys/fs/cgroup")
# containerd's shims listen here whatever containerd's state dir (its defaults.DefaultStateDir).
SHIM_SOCKETS = Path("/run/containerd/s")
# The host paths the manifests name, kubelet's root dir and the pool, are under /var/lib. In the
# node's mount namespace, the run's own directories are mounted over /var/lib and /var/log
# (NODE_HOST_DIRS), so that these paths, and the ones kubelet and CNI use whatever their
# configuration (kubelet's links to the containers' logs in /var/log/containers, libcni's cache of
# results in /var/lib/cni), are the run's. Mount points that always exist: no run makes or
# removes one on the host (a directory removed there would take the mounts on it in every
# namespace with it).
KUBELET_DIR = Path("/var/lib/kubelet")
POOL_DIR = Path("/var/lib/blockpool")
NODE_HOST_DIRS = (Path("/var/lib"), Path("/var/log"))
# The host's mounts the node's namespace keeps, with those below them.
NODE_SYSTEM_MOUNTS = (Path("/proc"), Path("/sys"), Path("/dev"), Path("/run"))


def why_no_containers():
    """Why this machine cannot run the real node, or None when it can."""
    if os.geteuid() != 0:
        return "needs root"
    if not (CGROUP_ROOT / "memory").is_dir() and not (CGROUP_ROOT / "cgroup.controllers").is_file():
        return "no cgroup hierarchy with the memory controller at /sys/fs/cgroup"
    if not Path("/proc/filesystems").read_text().count("overlay"):
        return "no overlay filesystem for containerd's snapshotter"
    return None


class RealNode:
    def __init__(self, cluster):
        self.c = cluster
        self.dir = cluster.work / "real-node"
        self.id = f"bpe2e{os.getpid() % 100000}"  # names the cgroup root and the bridge
        self.containerd_dir = self.dir / "containerd"
        self.socket = self.containerd_dir / "containerd.sock"
        # What the node's namespace mounts over NODE_HOST_DIRS, and so KUBELET_DIR and POOL_DIR.
        self.host_root = self.dir / "host"
        self.kubelet_dir = self.host_root / KUBELET_DIR.relative_to("/")
        self.pool = self.host_root / POOL_DIR.relative_to("/")
        self.pool_files = set()  # file_id()s of every pool file seen, for their loop devices
        self.cni_conf = self.dir / "cni"
        self.cgroup_root = f"/{self.id}"
        self.bridge = self.id
        # The node's address, on the bridge: kubelet refuses a loopback node IP, and kube-apiserver
        # reaches kubelet (logs, exec) at it. A /24 no address of the host is in yet.
        used = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True, check=True).stdout
        self.subnet = next(f"10.254.{n % 250}" for n in range(os.getpid(), os.getpid() + 250)
                           if f" 10.254.{n % 250}." not in used)
        self.ip = f"{self.subnet}.1"
        # There is no kube-proxy (it would change the host's iptables): the Services' range is
        # the lower half of the node's /24, so that the `kubernetes` Service's address, the first,
        # is the node's own, where ApiProxy forwards to kube-apiserver. Pods get the upper half.
        cluster.service_range = ipaddress.ip_network(f"{self.subnet}.0/25")
        self.api_proxy = None
        self.images = {}  # role (pause, busybox, driver, each sidecar) -> (archive, image name)
        self.namespace = self.containerd = self.kubelet = None
        self.shim_dir_existed = SHIM_SOCKETS.parent.exists()

    # ---- start -------------------------------------------------------------------------

    def start(self):
        for d in (self.containerd_dir, self.kubelet_dir, self.pool, self.host_root / "var" / "log", self.cni_conf,
                  self.dir / "pod-logs"):
            d.mkdir(parents=True, exist_ok=True)
        self.build_images()
        self.start_namespace()
        self.start_containerd()
        self.import_images()
        self.start_kubelet()

    def start_namespace(self):
        """The node's mount namespace: a process holding it (`unshare`, then sleep), a slave of
        the host's (nothing made inside shows on the host), with the run's dirs mounted over
        NODE_HOST_DIRS, /var/lib shared: containerd refuses Bidirectional mount propagation from a
        mount that is not, HostToContainer from one neither shared nor a slave."""
        self.namespace = self.c.start("node-namespace", ["unshare", "--mount", "--propagation", "slave",
                                                         "sleep", "infinity"])
        own = os.readlink("/proc/self/ns/mnt")
        wait_for("the node's mount namespace", lambda: os.readlink(f"/proc/{self.namespace.popen.pid}/ns/mnt") != own,
                 STARTED)
        self.shed_host_mounts()
        for d in NODE_HOST_DIRS:
            subprocess.run([*self.in_namespace(), "mount", "--bind", self.host_root / d.relative_to("/"), d],
                           check=True, capture_output=True)
        subprocess.run([*self.in_namespace(), "mount", "--make-rshared", KUBELET_DIR.parent], check=True,
                       capture_output=True)

    def shed_host_mounts(self):
        """Unmounts in the node's namespace, and only there, the host's mounts the node has no use
        for. The namespace starts as a copy of all of them, and a copy keeps its file system (and
        the loop device under it) after the host unmounts it: other work on this machine would
        find its loop devices busy until the node stops. Kept: /proc, /sys, /dev, /run and the
        mounts that hold the run's dir and the tools."""
        pid = self.namespace.popen.pid
        assert os.readlink(f"/proc/{pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt"), "not in the node's namespace"
        needed = [self.c.work, REPO, BIN, NODE_BIN, CNI_BIN, IMAGES]
        def kept(path):
            p = Path(path)
            return (any(p == k or k in p.parents for k in NODE_SYSTEM_MOUNTS)
                    or any(p == n or p in n.parents for n in needed))
        for m in sorted(host.mounts(Path("/"), pid), key=lambda m: -len(m["path"])):
            if not kept(m["path"]):
                subprocess.run([*self.in_namespace(), "umount", "--lazy", m["path"]], capture_output=True,
                               check=False)

    def in_namespace(self):
        """The command prefix that runs a command in the node's mount namespace."""
        return ["nsenter", f"--mount=/proc/{self.namespace.popen.pid}/ns/mnt", "--"]

    def root(self):
        """The file system as the node's mount namespace shows it."""
        return Path(f"/proc/{self.namespace.popen.pid}/root")

    def mounts(self, under=KUBELET_DIR):
        """The mounts under `under` in the node's mount namespace (host.mounts())."""
        return host.mounts(under, self.namespace.popen.pid)

    def see_pool_files(self):
        """Records the pool's files, whose loop devices teardown detaches: a loop device attached
        in the driver's container names its backing file by the container's path, so it is found
        by the file's inode (host.loops_backed_by())."""
        for f in self.pool.rglob("*"):
            if f.is_file():
                self.pool_files.add(host.file_id(f))

    def build_images(self):
        out = subprocess.run([REPO / "e2e" / "node" / "images.sh"], capture_output=True, text=True, check=True).stdout
        self.images = {role: (archive, image) for role, archive, image in map(str.split, out.splitlines())}

    def start_containerd(self):
        for cmd in (["link", "add", self.bridge, "type", "bridge"],
                    ["addr", "add", f"{self.ip}/24", "dev", self.bridge], ["link", "set", self.bridge, "up"]):
            subprocess.run(["ip", *cmd], check=True, capture_output=True)
        (self.cni_conf / "10-bridge.conflist").write_text(json.dumps({
            "cniVersion": "1.0.0", "name": self.id,
            "plugins": [
                # The run's own bridge, the node's address its gateway; no masquerading: pods
                # reach the node and each other, and no iptables rule of the host changes.
                {"type": "bridge", "bridge": self.bridge, "isGateway": True, "ipMasq": False,
                 "ipam": {"type": "host-local", "dataDir": str(self.dir / "ipam"),
                          "ranges": [[{"subnet": f"{self.subnet}.0/24", "gateway": self.ip,
                                       "rangeStart": f"{self.subnet}.128", "rangeEnd": f"{self.subnet}.254"}]]}},
                {"type": "loopback"}]}))
        d = self.containerd_dir
        cri_runtime = "plugins.'io.containerd.cri.v1.runtime'"
        config = d / "config.toml"
        config.write_text(f"""\
version = 3
root = '{d / "root"}'
state = '{d / "state"}'
[grpc]
  address = '{self.socket}'
[ttrpc]
  address = '{d / "containerd.sock.ttrpc"}'
[debug]
  address = ''
[plugins.'io.containerd.internal.v1.opt']
  path = '{d / "opt"}'
[plugins.'io.containerd.nri.v1.nri']
  disable = true
[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = '{self.images["pause"][1]}'
[plugins.'io.containerd.grpc.v1.cri']
  enable_tls_streaming = false
[{cri_runtime}]
  # no CAP_SYS_RESOURCE here: no score below containerd's own
  restrict_oom_score_adj = true
  # the pods' network namespaces are mounted in the state dir, so teardown finds them
  netns_mounts_under_state_dir = true
[{cri_runtime}.cni]
  bin_dirs = ['{CNI_BIN}']
  conf_dir = '{self.cni_conf}'
[{cri_runtime}.containerd]
  default_runtime_name = 'runc'
[{cri_runtime}.containerd.runtimes.runc]
  runtime_type = 'io.containerd.runc.v2'
[{cri_runtime}.containerd.runtimes.runc.options]
  BinaryName = '{NODE_BIN / "runc"}'
  Root = '{d / "runc"}'
  SystemdCgroup = false
""")
        self.api_proxy = ApiProxy((self.ip, 443), ("127.0.0.1", self.c.apiserver_port))
        # The shim is found on PATH.
        self.containerd = self.c.start("containerd", [*self.in_namespace(), NODE_BIN / "containerd", "--config",
                                                      config], env={"PATH": f"{NODE_BIN}:{os.environ['PATH']}"})
        wait_for("containerd serving", lambda: self.ctr("version", check=False).returncode == 0, timeout=60)

    def ctr(self, *args, check=True):
        return subprocess.run([NODE_BIN / "ctr", "--address", self.socket, "--namespace", K8S_NAMESPACE,
                               *map(str, args)], capture_output=True, text=True, check=check)

    def import_images(self):
        for archive, name in self.images.values():
            self.ctr("images", "import", "--no-unpack=false", IMAGES / archive)
            assert name in self.ctr("images", "ls", "-q").stdout.split(), f"{name} not in containerd after import"

    def overlay(self, base):
        """A kustomization of the repository's `base` for this node, in the run's dir: each image the
        manifests name replaced by its build from images.sh (the role named as the image, the
        driver's "driver"), and imagePullPolicy: Never on every container. Returns its dir."""
        local = {role: image for role, (_, image) in self.images.items()}
        images, patches = {}, []
        for d in self.c.render(base):
            spec = d.get("spec", {}).get("template", {}).get("spec")
            if not spec:
                continue
            for c in spec["containers"]:
                name = c["image"].rpartition(":")[0] or c["image"]
                role = name.rpartition("/")[2]
                role = "driver" if role == "blockpool-csi" else role
                assert role in local, f"no image built for {c['image']} of {d['kind']} {d['metadata']['name']}"
                new_name, _, new_tag = local[role].rpartition(":")
                images[name] = {"name": name, "newName": new_name, "newTag": new_tag}
            patches.append({"target": {"kind": d["kind"], "name": d["metadata"]["name"]}, "patch": yaml.safe_dump({
                "apiVersion": d["apiVersion"], "kind": d["kind"], "metadata": {"name": d["metadata"]["name"]},
                "spec": {"template": {"spec": {"containers": [{"name": c["name"], "imagePullPolicy": "Never"}
                                                              for c in spec["containers"]]}}}})})
        out = self.dir / "manifests"
        out.mkdir(exist_ok=True)
        (out / "kustomization.yaml").write_text(yaml.safe_dump({
            "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
            "resources": [os.path.relpath(REPO / base, out)], "images": list(images.values()), "patches": patches}))
        return out

    def start_kubelet(self):
        # kubelet's cgroups live under a root of the run's own, in each v1 hierarchy (cgroupfs
        # driver); kubelet wants it to exist.
        for hierarchy in self.cgroup_hierarchies():
            (hierarchy / self.id).mkdir(exist_ok=True)
        self.record_sysctls()
        kubeconfig = self.c.cert_kubeconfig("real-node", f"system:node:{REAL_NODE}", "system:nodes")
        config = self.dir / "kubelet.yaml"
        config.write_text(yaml.safe_dump({
            "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "containerRuntimeEndpoint": f"unix://{self.socket}",
            # no systemd: kubelet manages cgroups through the cgroup filesystem
            "cgroupDriver": "cgroupfs",
            "cgroupRoot": self.cgroup_root,
            # this machine has cgroup v1 (hybrid), which kubelet refuses by default since 1.35
            "failCgroupV1": False,
            "failSwapOn": False,
            "port": free_port(), "healthzPort": free_port(), "healthzBindAddress": "127.0.0.1",
            "readOnlyPort": 0, "address": self.ip,
            "podLogsDir": str(self.dir / "pod-logs"),
            # kube-apiserver has no kubelet client certificate in this cluster, and kubectl logs
            # goes through it: kubelet's API answers anyone, on the run's bridge only.
            "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
            "authorization": {"mode": "AlwaysAllow"},
            # a throwaway node on a shared disk: no evictions for its usage
            "evictionHard": {"memory.available": "0%", "nodefs.available": "0%", "imagefs.available": "0%"},
            "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
            "registerNode": True, "serializeImagePulls": False,
            "staticPodPath": "",
        }))
        self.kubelet = self.c.start("real-kubelet", [
            *self.in_namespace(),
            BIN / "kubelet", "--config", config, "--kubeconfig", kubeconfig, "--root-dir", KUBELET_DIR,
            "--cert-dir", self.dir / "kubelet-pki", "--hostname-override", REAL_NODE, "--node-ip", self.ip,
            "--v=2"])
        wait_for(f"{REAL_NODE} Ready", lambda: self.c.kubectl(
            "get", "node", REAL_NODE, "-o", "jsonpath={.status.conditions[?(@.type=='Ready')].status}",
            check=False) == "True", timeout=180)

    # ---- teardown ----------------------------------------------------------------------

    def teardown(self):
        """Stops kubelet, then every container and shim of this containerd, then containerd;
        unmounts what they left in the node's namespace and detaches the pool's loop devices, ends
        the namespace; unmounts what is left under the run's dir, removes the bridge and kubelet's
        cgroups and puts kubelet's kernel tunables back. Each step runs whatever the one before did.
        Returns what is still left."""
        left = []
        for step in (lambda: self.stop_proc(self.kubelet), self.remove_containers, self.kill_shims,
                     lambda: self.stop_proc(self.containerd), self.remove_shim_socket_dir,
                     lambda: left.extend(self.release_namespace()), lambda: self.stop_proc(self.namespace),
                     lambda: self.api_proxy and self.api_proxy.stop(),
                     lambda: left.extend(host.release_everything_under(self.dir)), self.remove_bridge,
                     lambda: left.extend(self.remove_cgroups()), self.restore_sysctls, self.keep_pod_logs):
            try:
                step()
            except Exception as e:  # noqa: BLE001 - keep tearing down, report what is left
                left.append(f"real node teardown: {type(e).__name__}: {e}")
        return left

    def keep_pod_logs(self):
        """The containers' logs, beside the components' (kept when a flow failed)."""
        if (self.dir / "pod-logs").is_dir():
            shutil.copytree(self.dir / "pod-logs", self.c.logs / "real-node-pods", dirs_exist_ok=True)

    def release_namespace(self):
        """Unmounts everything under the kubelet and pool dirs and the run's dir in the node's
        namespace, deepest first, and detaches the loop devices of the pool's files. Returns
        what is left."""
        def detach():
            for name in host.loops_backed_by(self.pool_files):
                subprocess.run(["losetup", "-d", f"/dev/{name}"], capture_output=True, check=False)
        left = []
        if os.path.isdir(self.pool):
            self.see_pool_files()
        detach()
        if self.namespace and self.namespace.alive():
            for d in (KUBELET_DIR, POOL_DIR, self.dir):
                left += [f"in the node's namespace: {m}" for m in host.release_everything_under(
                    d, self.namespace.popen.pid)]
        detach()  # devices the mounts held until now
        return left + [f"loop {n} -> {b}" for n, b in host.loops_backed_by(self.pool_files).items()]

    def remove_containers(self):
        if not (self.containerd and self.containerd.alive()):
            return
        for task in self.ctr("tasks", "ls", "-q", check=False).stdout.split():
            self.ctr("tasks", "kill", "-s", "SIGKILL", task, check=False)
            wait_for(f"container {task} stopped", lambda t=task: self.ctr("tasks", "rm", "-f", t,
                                                                          check=False).returncode == 0
                     or t not in self.ctr("tasks", "ls", "-q", check=False).stdout.split(), timeout=30)
        for container in self.ctr("containers", "ls", "-q", check=False).stdout.split():
            self.ctr("containers", "rm", container, check=False)

    def remove_bridge(self):
        if subprocess.run(["ip", "link", "show", self.bridge], capture_output=True, check=False).returncode == 0:
            subprocess.run(["ip", "link", "delete", self.bridge], capture_output=True, check=True)

    @contextlib.contextmanager
    def sysctl_record(self):
        """The machine's record of kubelet's kernel tunables, locked against other runs."""
        SYSCTL_RECORD.mkdir(exist_ok=True)
        with open(SYSCTL_RECORD / "lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            users = SYSCTL_RECORD / "nodes"
            users.mkdir(exist_ok=True)
            for pid in os.listdir(users):
                if not Path(f"/proc/{pid}").exists():
                    (users / pid).unlink()  # a run that died without its teardown
            yield SYSCTL_RECORD / "sysctls.json", users

    def record_sysctls(self):
        with self.sysctl_record() as (values, users):
            if not values.exists():
                values.write_text(json.dumps({n: (Path("/proc/sys") / n).read_text().strip()
                                              for n in KUBELET_SYSCTLS}))
            (users / str(os.getpid())).touch()

    def restore_sysctls(self):
        if not (SYSCTL_RECORD / "nodes" / str(os.getpid())).exists():
            return  # kubelet was not started
        with self.sysctl_record() as (values, users):
            (users / str(os.getpid())).unlink()
            if any(users.iterdir()):
                return  # another real node runs: the last one puts the values back
            for name, value in json.loads(values.read_text()).items():
                (Path("/proc/sys") / name).write_text(value + "\n")
            values.unlink()
            users.rmdir()  # the lock file stays, in /run, for the next run to lock

    def stop_proc(self, proc):
        if proc:
            proc.stop()
            if proc in self.c.procs:
                self.c.procs.remove(proc)

    def kill_shims(self):
        """containerd's shims outlive it on purpose (they hold the containers); these are the ones
        started for this run's containerd, which name its socket on their command line. A killed
        shim leaves its socket where containerd puts every shim's, under SHIM_SOCKETS, named by
        the hash of containerd's socket, namespace and sandbox id."""
        for p in Path("/proc").glob("[0-9]*"):
            try:
                argv = (p / "cmdline").read_bytes().decode().split("\0")
            except (OSError, UnicodeDecodeError):
                continue
            if not (argv[0].endswith("containerd-shim-runc-v2") and str(self.socket) in argv):
                continue
            try:
                os.kill(int(p.name), signal.SIGKILL)
            except ProcessLookupError:
                pass
            flag = dict(itertools.pairwise(argv))
            name = hashlib.sha256(f"{self.socket}/{flag.get('-namespace')}/{flag.get('-id')}".encode()).hexdigest()
            (SHIM_SOCKETS / name).unlink(missing_ok=True)

    def remove_shim_socket_dir(self):
        """The shims' socket dir, when this run's containerd made it and left it empty."""
        if not self.shim_dir_existed:
            for d in (SHIM_SOCKETS, SHIM_SOCKETS.parent):
                try:
                    d.rmdir()
                except OSError:
                    break

    def cgroup_hierarchies(self):
        if (CGROUP_ROOT / "cgroup.controllers").is_file():
            return [CGROUP_ROOT]
        return [CGROUP_ROOT / h for h in os.listdir(CGROUP_ROOT)
                if (CGROUP_ROOT / h).is_dir() and not (CGROUP_ROOT / h).is_symlink()]

    def remove_cgroups(self):
        """rmdir, deepest first, of every cgroup under the run's cgroup root (empty once the
        containers are gone)."""
        left = []
        for hierarchy in self.cgroup_hierarchies():
            root = hierarchy / self.id
            if not root.is_dir():
                continue
            for d in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
                try:
                    d.rmdir()
                except OSError:
                    pass
            try:
                root.rmdir()
            except OSError as e:
                left.append(f"cgroup {root}: {e.strerror}")
        return left


def pod_on_node(name, image, command=None, args=None):
    """A pod of one container on the real node, from an image in containerd's store."""
    c = {"name": "main", "image": image, "imagePullPolicy": "Never"}
    if command:
        c["command"] = command
    if args:
        c["args"] = args
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": REAL_NODE, "restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                     "automountServiceAccountToken": False, "containers": [c]}}


class ApiProxy:
    """Forwards TCP connections from `listen` to `to`: pods reach kube-apiserver at the
    `kubernetes` Service's address, which is the node's (RealNode.__init__), port 443. Each
    connection is two threads, one per direction; stop() closes the listener and every
    connection."""

    def __init__(self, listen, to):
        self.to = to
        self.conns = []
        self.server = socket.create_server(listen)
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return  # stopped
            try:
                upstream = socket.create_connection(self.to)
            except OSError:
                client.close()
                continue
            self.conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self.pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def pipe(a, b):
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                b.shutdown(socket.SHUT_WR)

    def stop(self):
        with contextlib.suppress(OSError):
            self.server.shutdown(socket.SHUT_RDWR)  # ends the accept() under way
        self.server.close()
        for conn in self.conns:
            with contextlib.suppress(OSError):
                conn.close()
