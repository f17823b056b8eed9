"""Changed block tracking end to end: the kubernetes-csi external-snapshot-metadata sidecar, run
as sidecars-deploy/overlays/snapshot-metadata gives it to the controller pod, serves the
driver's SnapshotMetadata service to its own clients, snapshot-metadata-lister and
snapshot-metadata-verifier, which a backup tool's ServiceAccount runs on this host. What they
report is checked against the pool's images (their data ranges, as lseek sees them) and against
the bytes written, and the verifier checks the reported blocks against the restored devices."""

import base64
import fcntl
import itertools
import json
import os
import socket
import struct
import subprocess

import yaml

import cluster as cl
from cluster import NAMESPACE, ON_HOST, RECONCILED, STARTED, wait_for

OVERLAY = "sidecars-deploy/overlays/snapshot-metadata"
SIDECAR = "csi-snapshot-metadata"
SERVICE = f"blockpool-snapshot-metadata.{NAMESPACE}"  # the overlay's Service, named in the certificate
AUDIENCE = "blockpool-snapshot-metadata"  # as docs/changed-block-tracking.md has it
BACKUP_SA = "e2e-backup"  # the backup tool's ServiceAccount, in the test's namespace
CLIENT_ROLE = cl.REPO / ".cache" / "e2e" / "snapshot-metadata" / "snapshot-metadata-client-cluster-role.yaml"
NS = "default"
KI, MI = 1 << 10, 1 << 20
BLOCK = 4 * KI
BLKDISCARD = 0x1277  # <linux/fs.h> _IO(0x12, 119)


def enable(c: cl.Cluster):
    """What docs/changed-block-tracking.md has a cluster admin do: the SnapshotMetadataService CRD,
    a certificate for the sidecar's Service in the TLS Secret, kubectl apply -k of the overlay, and the
    SnapshotMetadataService object with the address, the CA and the audience. The sidecar then
    runs with the arguments the overlay gives its container, under the controller's token."""
    c.install_crds("cbt.storage.k8s.io", ("snapshotmetadataservices",))
    tls = c.work / "snapshot-metadata-tls"  # the Secret's volume, as the container sees it
    tls.mkdir()
    ca = c.pki / "snapshot-metadata-ca.crt"
    c.openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "snapshot-metadata-ca.key", "-out", ca,
              "-days", "2", "-subj", "/CN=blockpool-e2e-snapshot-metadata-ca")
    # The Service's names for a client in the cluster; 127.0.0.1 for the lister on this host.
    (c.pki / "snapshot-metadata.ext").write_text(
        f"subjectAltName=DNS:{SERVICE},DNS:{SERVICE}.svc,IP:127.0.0.1\n")
    c.openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", tls / "tls.key", "-out",
              "snapshot-metadata.csr", "-subj", f"/CN={SERVICE}")
    c.openssl("x509", "-req", "-in", "snapshot-metadata.csr", "-CA", ca, "-CAkey", "snapshot-metadata-ca.key",
              "-CAcreateserial", "-days", "2", "-extfile", "snapshot-metadata.ext", "-out", tls / "tls.crt")
    c.kubectl("create", "secret", "tls", "blockpool-snapshot-metadata-tls", "-n", NAMESPACE,
              "--cert", tls / "tls.crt", "--key", tls / "tls.key")
    c.kubectl("apply", "-k", cl.REPO / OVERLAY)

    dep = c.workload(c.render(OVERLAY), "Deployment", "blockpool-controller")
    c.check_sidecar_versions(dep["spec"]["template"]["spec"])
    args, env, _ = c.container_command(dep, SIDECAR, c.controller_pod,
                                       {**c.controller_host_paths, "emptyDir:snapshot-metadata-tls": tls}, c.ports)
    # The container's gRPC port, moved to a free one on this host (the Service's targetPort).
    port = cl.free_port()
    assert "--port=50051" in args, f"the overlay's {SIDECAR} arguments: {args}"
    args = [f"--port={port}" if a == "--port=50051" else a for a in args]
    c.sidecars[SIDECAR] = c.start(SIDECAR, [cl.BIN / SIDECAR, *args, f"--kubeconfig={c.sa_kubeconfig}"], env=env)
    # The Service's address stands in as 127.0.0.1 here: the test has no cluster DNS.
    c.apply({"apiVersion": "cbt.storage.k8s.io/v1alpha1", "kind": "SnapshotMetadataService",
             "metadata": {"name": cl.DRIVER_NAME},
             "spec": {"address": f"127.0.0.1:{port}", "audience": AUDIENCE,
                      "caCert": base64.b64encode(ca.read_bytes()).decode()}})
    wait_for(f"{SIDECAR} serving on port {port}", lambda: listening(port) and c.sidecars[SIDECAR].alive(), STARTED)

    # The backup tool: a ServiceAccount with the module's client ClusterRole, and a kubeconfig
    # with its token (the lister asks for a token of the sidecar's audience with it).
    c.kubectl("apply", "-f", CLIENT_ROLE)
    c.kubectl("create", "serviceaccount", BACKUP_SA, "-n", NS)
    client_role = yaml.safe_load(CLIENT_ROLE.read_text())["metadata"]["name"]
    c.kubectl("create", "clusterrolebinding", "e2e-backup-snapshot-metadata", f"--clusterrole={client_role}",
              f"--serviceaccount={NS}:{BACKUP_SA}")
    token = c.kubectl("create", "token", BACKUP_SA, "-n", NS, "--duration=2h").strip()
    c.backup_kubeconfig = c.kubeconfig(c.work / "backup.kubeconfig", {"token": token})


def listening(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def run_client(c, tool, *args, service_account=BACKUP_SA):
    """A client of the sidecar, with a token of `service_account` that the backup tool's
    ServiceAccount asks for; its output, or its error."""
    argv = [cl.BIN / tool, "-kubeconfig", c.backup_kubeconfig, "-service-account", service_account,
            "-service-account-namespace", NS, "-n", NS, *args]
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=120, check=False)


def lister(c, snapshot, base=None):
    """snapshot-metadata-lister's ranges of `snapshot` (changed since `base`), merged where they
    touch: [(offset, length)], and the volume capacity it reports."""
    r = run_client(c, "snapshot-metadata-lister", "-s", snapshot, *(("-p", base) if base else ()), "-o", "json")
    assert r.returncode == 0, f"snapshot-metadata-lister -s {snapshot} {base or ''}: {r.stderr.strip()[-600:]}"
    records = json.loads(r.stdout)
    capacities = {rec["volume_capacity_bytes"] for rec in records}
    assert len(capacities) <= 1, f"volume_capacity_bytes changes within the stream: {capacities}"
    ranges = [(t.get("byte_offset", 0), t["size_bytes"]) for rec in records for t in rec.get("block_metadata") or []]
    assert all(a[0] + a[1] <= b[0] for a, b in itertools.pairwise(ranges)), \
        f"ranges out of order or overlapping: {ranges}"
    return merged(ranges), capacities.pop() if capacities else None


def merged(ranges):
    out = []
    for off, size in ranges:
        if out and out[-1][0] + out[-1][1] == off:
            out[-1] = (out[-1][0], out[-1][1] + size)
        else:
            out.append((off, size))
    return out


def data_ranges(image):
    """The data ranges of a pool image as the kernel reports them (SEEK_DATA, SEEK_HOLE)."""
    out, fd = [], os.open(image, os.O_RDONLY)
    try:
        end, pos = os.fstat(fd).st_size, 0
        while pos < end:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:  # ENXIO: no data after pos
                break
            pos = os.lseek(fd, start, os.SEEK_HOLE)
            out.append((start, pos - start))
    finally:
        os.close(fd)
    return merged(out)


def covers(ranges, off, size):
    return any(o <= off and off + size <= o + n for o, n in ranges)


def touches(ranges, off, size):
    return any(o < off + size and off < o + n for o, n in ranges)


def snapshot(c, name, claim):
    c.apply({"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
             "metadata": {"name": name, "namespace": NS},
             "spec": {"volumeSnapshotClassName": "blockpool-snapshots",
                      "source": {"persistentVolumeClaimName": claim}}})
    snap = wait_for(f"VolumeSnapshot {name} readyToUse", lambda: (s := c.get("volumesnapshot", name, "-n", NS))
                    and s.get("status", {}).get("readyToUse") and s, RECONCILED)
    handle = c.get("volumesnapshotcontent", snap["status"]["boundVolumeSnapshotContentName"])["status"][
        "snapshotHandle"]
    return c.pool / "snapshots" / f"{handle}.img"


def write(device, offset, data):
    fd = os.open(device, os.O_WRONLY)
    try:
        os.pwrite(fd, data, offset)
        os.fsync(fd)
    finally:
        os.close(fd)


def read(device, offset, size):
    fd = os.open(device, os.O_RDONLY)
    try:
        return os.pread(fd, size, offset)
    finally:
        os.close(fd)


def discard(device, offset, size):
    """BLKDISCARD, as a file system's trim does: the loop device punches a hole in its image."""
    fd = os.open(device, os.O_WRONLY)
    try:
        fcntl.ioctl(fd, BLKDISCARD, struct.pack("QQ", offset, size))
        os.fsync(fd)
    finally:
        os.close(fd)


def block_pod(t, name, claims):
    """A pod using `claims` as raw block devices; each claim's device node at kubelet's publish path."""
    c = t.c
    c.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
             "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                                               "volumeDevices": [{"name": claim, "devicePath": f"/dev/{claim}"}
                                                        for claim in claims]}],
                      "volumes": [{"name": claim, "persistentVolumeClaim": {"claimName": claim}} for claim in claims],
                      "terminationGracePeriodSeconds": 0, "automountServiceAccountToken": False}})
    for claim in claims:
        t.attached(t.bound_claim(claim))
    p = t.running_pod(name)
    devices = {}
    for claim in claims:
        v = t.claim_volume(claim)
        device = (c.kubelet / "plugins/kubernetes.io/csi/volumeDevices/publish" / v["pv"] / p["metadata"]["uid"])
        wait_for(f"{claim}'s device at {device}", lambda device=device: device.is_block_device(), ON_HOST)
        loop, _ = t.host_mounts_of(v)
        v.update(pod=name, loop=loop, publish=device)
        t.volumes[claim] = v
        devices[claim] = device
    return devices


# What the block flow writes, 4 KiB blocks of one byte each: before the base snapshot, then
# before the target snapshot. The range across 8 MiB does not change between them.
SIZE = 64 * MI  # the claims' "64Mi"
BEFORE = [(0, b"\xa1"), (MI, b"\xc1"), (8 * MI - BLOCK, b"\xd1"), (8 * MI, b"\xd1")]
AFTER = [(MI, b"\xc2"), (20 * MI, b"\xe2")]
DISCARDED = 0  # the first block, discarded after the base snapshot
UNCHANGED = (8 * MI - BLOCK, 2 * BLOCK)


def block(t, pvc):
    """A block claim written at known offsets, snapshotted, changed (a block rewritten, one
    written, one discarded), snapshotted again. The lister's Allocated of each snapshot is the
    data ranges of its pool image; its Delta covers every change and not the range that stayed.
    The verifier copies the reported blocks between devices restored from the snapshots and
    finds them equal. pvc: e2e's claim builder."""
    c = t.c
    c.apply(pvc("cbt-block", "blockpool-xfs", "64Mi", block=True))
    device = block_pod(t, "app-cbt-block", ["cbt-block"])["cbt-block"]
    for off, byte in BEFORE:
        write(device, off, byte * BLOCK)
    base_image = snapshot(c, "cbt-base", "cbt-block")
    for off, byte in AFTER:
        write(device, off, byte * BLOCK)
    discard(device, DISCARDED, BLOCK)
    target_image = snapshot(c, "cbt-target", "cbt-block")

    for name, image in (("cbt-base", base_image), ("cbt-target", target_image)):
        allocated, capacity = lister(c, name)
        assert capacity == SIZE, f"{name}: volume_capacity_bytes {capacity}, the claim has {SIZE}"
        assert allocated == data_ranges(image), \
            f"{name}: the lister's allocated ranges {allocated} are not the data of {image.name}: {data_ranges(image)}"
    allocated, _ = lister(c, "cbt-target")
    for off, _byte in AFTER + [(UNCHANGED[0], None)]:
        assert covers(allocated, off, BLOCK), f"cbt-target: block {off} written but not allocated: {allocated}"

    delta, capacity = lister(c, "cbt-target", base="cbt-base")
    assert capacity == SIZE, f"delta: volume_capacity_bytes {capacity}"
    for off, _byte in AFTER + [(DISCARDED, None)]:
        assert covers(delta, off, BLOCK), f"the delta misses the change at {off}: {delta}"
    assert not touches(delta, *UNCHANGED), f"the delta reports the range {UNCHANGED}, unchanged: {delta}"
    print(f"        allocated (cbt-target): {describe(allocated)}; changed since cbt-base: {describe(delta)}")
    # The sidecar reviews each token's rights: one of a ServiceAccount that may not get the
    # snapshots gets nothing.
    c.kubectl("create", "serviceaccount", "e2e-no-snapshots", "-n", NS)
    r = run_client(c, "snapshot-metadata-lister", "-s", "cbt-target", service_account="e2e-no-snapshots")
    assert r.returncode != 0 and "PermissionDenied" in r.stderr, \
        f"a ServiceAccount without the client role: exit {r.returncode}, {(r.stderr or r.stdout).strip()[-300:]}"

    # The verifier: devices restored from both snapshots, and a fresh one, in one pod.
    c.apply([pvc(f"cbt-restored-{s}", "blockpool-xfs", "64Mi", block=True, source={
        "apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": f"cbt-{s}"})
        for s in ("base", "target")] + [pvc("cbt-fresh", "blockpool-xfs", "64Mi", block=True)])
    devs = block_pod(t, "app-cbt-verify", ["cbt-restored-base", "cbt-restored-target", "cbt-fresh"])
    base_dev, target_dev, fresh = devs["cbt-restored-base"], devs["cbt-restored-target"], devs["cbt-fresh"]
    for off, _ in AFTER:
        assert read(base_dev, off, BLOCK) != read(target_dev, off, BLOCK), f"the restores do not differ at {off}"
    # Delta: the changed blocks of the target copied onto the base's restore make it the target.
    r = run_client(c, "snapshot-metadata-verifier", "-s", "cbt-target", "-p", "cbt-base",
                   "-src", target_dev, "-tgt", base_dev)
    assert r.returncode == 0, f"snapshot-metadata-verifier (delta): {(r.stderr or r.stdout).strip()[-600:]}"
    assert read(base_dev, MI, BLOCK) == b"\xc2" * BLOCK, "the verifier did not copy the changed blocks"
    # Allocated: the target's data copied onto a device of zeros makes it the target.
    r = run_client(c, "snapshot-metadata-verifier", "-s", "cbt-target", "-src", target_dev, "-tgt", fresh)
    assert r.returncode == 0, f"snapshot-metadata-verifier (allocated): {(r.stderr or r.stdout).strip()[-600:]}"


def filesystem(t):
    """A file system claim (data-ext4): its snapshot's Allocated through the sidecar is the data
    of its pool image, and the delta to a later snapshot covers a file written in between."""
    c = t.c
    v = t.volumes["data-ext4"]
    base_image = c.pool / "snapshots" / f"{t.snapshot_handle}.img"
    allocated, capacity = lister(c, "snap-ext4")
    assert capacity == base_image.stat().st_size, f"snap-ext4: volume_capacity_bytes {capacity}"
    assert allocated == data_ranges(base_image), \
        f"snap-ext4: the lister's ranges {allocated} are not the data of {base_image.name}"
    marker = os.urandom(64 * KI)  # found again in the image to know where the file system put it
    path = v["publish"] / "cbt-e2e"
    path.write_bytes(marker)
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    target_image = snapshot(c, "cbt-ext4", "data-ext4")
    at = find(target_image, marker)
    assert at is not None, f"the file's bytes are not in {target_image.name}"
    delta, _ = lister(c, "cbt-ext4", base="snap-ext4")
    assert covers(delta, at, len(marker)), f"the delta misses the file's data at {at}: {delta}"
    print(f"        snap-ext4 allocated: {describe(allocated)}; the file at {at} in a delta of {describe(delta)}")


def find(image, data):
    """Where `data` (block-aligned, as a file system puts a file's blocks) is in the image."""
    with open(image, "rb") as f:
        for off, size in data_ranges(image):
            for at in range(off - off % BLOCK, off + size, BLOCK):
                f.seek(at)
                if f.read(BLOCK) == data[:BLOCK]:
                    f.seek(at)
                    if f.read(len(data)) == data:
                        return at
    return None


def describe(ranges):
    return f"{len(ranges)} ranges, {sum(n for _, n in ranges) / KI:.0f} KiB"

