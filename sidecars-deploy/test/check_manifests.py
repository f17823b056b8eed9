#!/usr/bin/env python3
"""The rules of check-manifests.sh, which finds kustomize, checks for PyYAML and runs this.

Renders the base, every overlay and the examples under DEPLOY_DIR with
`KUSTOMIZE build` and checks the rendered objects: pinned images, one driver
name everywhere, every sidecar on the driver's socket, a privileged node plugin
with Bidirectional propagation on the kubelet directory, liveness probes wired to
the livenessprobe sidecar, resources on every container, RBAC that covers
what each sidecar needs (and nothing broad), the two layouts (a pool on every
node, with the node-deployed sidecars and their RBAC exactly; a shared pool, with
one controller Deployment and a node plugin that talks to no API),
csi-snapshotter's group snapshot gate with its RBAC only where group snapshots are
opted in to, the external-snapshot-metadata sidecar with its RBAC, TLS Secret
and Service only where changed block tracking is, and the peer channel on
node-local pools only: its port, its CA's Secret mounted at --peer-ca-dir and
made by the peer-ca Job with exactly the rights it uses, the pods the driver
lists to find the other nodes, and the NetworkPolicy that lets only those pods in.

Usage: check_manifests.py DEPLOY_DIR KUSTOMIZE [-v]
Prints one line per failed check (with -v, per passed check too) and ends with
`manifests: N passed, M failed`; exits 1 when a check failed.
Needs python3 and PyYAML only.
"""
import os
import posixpath
import re
import subprocess
import sys

import yaml

# Set from the command line by main().
DEPLOY_DIR = ""
KUSTOMIZE = "kustomize"
VERBOSE = False

DRIVER_IMAGE = "blockpool-csi"
TOPOLOGY_KEY = "topology.blockpool.csi.dev/node"
FS_TYPES = {"ext4", "xfs"}
ALLOCATIONS = {"sparse", "preallocated"}
KUBELET_DIR = "/var/lib/kubelet"
METRICS_PORT_NAME = "metrics"
LOG_FORMATS = {"text", "json"}

# The sidecar versions the RBAC below was taken for. Changing a version means
# re-reading that sidecar's RBAC for the new version.
SIDECAR_VERSIONS = {
    "csi-provisioner": "v6.3.0",
    "csi-attacher": "v4.12.0",
    "csi-snapshotter": "v8.6.0",
    "csi-resizer": "v2.2.1",
    "csi-node-driver-registrar": "v2.17.0",
    "livenessprobe": "v2.19.0",
    "csi-snapshot-metadata": "v0.2.0",
}
# What ControllerModifyVolume can change (csi/CsiKeys, VolumeParameters.MUTABLE_KEYS).
MUTABLE_PARAMETERS = {"allocation", "readIOPS", "writeIOPS", "readBytesPerSecond", "writeBytesPerSecond"}
CONTROLLER_SIDECARS = ("csi-provisioner", "csi-attacher", "csi-snapshotter", "csi-resizer")

# What each sidecar must be allowed to do cluster-wide: (apiGroup, resource) -> verbs.
CLUSTER_RULES = {
    "csi-provisioner": {
        ("", "persistentvolumes"): {"get", "list", "watch", "create", "patch", "delete"},
        ("", "persistentvolumeclaims"): {"get", "list", "watch", "update"},
        ("storage.k8s.io", "storageclasses"): {"get", "list", "watch"},
        ("", "events"): {"list", "watch", "create", "update", "patch"},
        ("snapshot.storage.k8s.io", "volumesnapshots"): {"get", "list", "watch", "update"},
        ("snapshot.storage.k8s.io", "volumesnapshotcontents"): {"get", "list"},
        ("storage.k8s.io", "csinodes"): {"get", "list", "watch"},
        ("", "nodes"): {"get", "list", "watch"},
        ("storage.k8s.io", "volumeattachments"): {"get", "list", "watch"},
        ("storage.k8s.io", "volumeattributesclasses"): {"get", "list", "watch"},
    },
    "csi-attacher": {
        ("", "persistentvolumes"): {"get", "list", "watch", "patch"},
        ("storage.k8s.io", "csinodes"): {"get", "list", "watch"},
        ("storage.k8s.io", "volumeattachments"): {"get", "list", "watch", "patch"},
        ("storage.k8s.io", "volumeattachments/status"): {"patch"},
    },
    "csi-snapshotter": {
        ("", "events"): {"list", "watch", "create", "update", "patch"},
        ("snapshot.storage.k8s.io", "volumesnapshotclasses"): {"get", "list", "watch"},
        ("snapshot.storage.k8s.io", "volumesnapshotcontents"): {"get", "list", "watch", "update", "patch"},
        ("snapshot.storage.k8s.io", "volumesnapshotcontents/status"): {"update", "patch"},
    },
    "csi-resizer": {
        ("", "persistentvolumes"): {"get", "list", "watch", "patch"},
        ("", "persistentvolumeclaims"): {"get", "list", "watch"},
        ("", "pods"): {"get", "list", "watch"},
        ("", "persistentvolumeclaims/status"): {"patch"},
        ("", "events"): {"list", "watch", "create", "update", "patch"},
        ("storage.k8s.io", "volumeattributesclasses"): {"get", "list", "watch"},
    },
}
# A pool on every node (--pool-scope=node): the sidecars that run beside each node plugin.
NODE_SIDECARS = ("csi-provisioner", "csi-snapshotter", "csi-resizer")
# What only a cluster-wide provisioner needs: the nodes' topology, and VolumeAttachments of a
# driver with PUBLISH_UNPUBLISH_VOLUME. A node-deployed one builds its Node and CSINode from
# NodeGetInfo, and the driver publishes nothing on a node-local pool.
CLUSTER_WIDE_PROVISIONER_RULES = {
    ("storage.k8s.io", "csinodes"), ("", "nodes"), ("storage.k8s.io", "volumeattachments")}
NODE_RULES = {
    "csi-provisioner": {k: v for k, v in CLUSTER_RULES["csi-provisioner"].items()
                        if k not in CLUSTER_WIDE_PROVISIONER_RULES},
    "csi-snapshotter": CLUSTER_RULES["csi-snapshotter"],
    "csi-resizer": CLUSTER_RULES["csi-resizer"],
}
SERVICE_ACCOUNT_TOKEN_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# Volume group snapshots: csi-snapshotter's CSIVolumeGroupSnapshot gate and the rules only it
# needs. The gate makes the sidecar wait for the groupsnapshot.storage.k8s.io CRDs, snapshotting
# nothing meanwhile, so it is on only in the variants that opt in (components/group-snapshots).
GROUP_SNAPSHOT_GATE = "CSIVolumeGroupSnapshot=true"
GROUP_SNAPSHOT_VARIANTS = {"overlays/group-snapshots"}
GROUP_SNAPSHOT_RULES = {
    ("groupsnapshot.storage.k8s.io", "volumegroupsnapshotclasses"): {"get", "list", "watch"},
    ("groupsnapshot.storage.k8s.io", "volumegroupsnapshotcontents"): {"get", "list", "watch", "update", "patch"},
    ("groupsnapshot.storage.k8s.io", "volumegroupsnapshotcontents/status"): {"update", "patch"},
}
# Changed block tracking: the external-snapshot-metadata sidecar, with what it calls, in the
# variants that opt in (components/snapshot-metadata); it needs a TLS Secret and a
# SnapshotMetadataService object only the cluster's admin can make, so nowhere else.
SNAPSHOT_METADATA_VARIANTS = {"overlays/snapshot-metadata"}
SNAPSHOT_METADATA_RULES = {
    ("cbt.storage.k8s.io", "snapshotmetadataservices"): {"get"},
    ("authentication.k8s.io", "tokenreviews"): {"create"},
    ("authorization.k8s.io", "subjectaccessreviews"): {"create"},
    ("snapshot.storage.k8s.io", "volumesnapshots"): {"get"},
    ("snapshot.storage.k8s.io", "volumesnapshotcontents"): {"get"},
}
# The peer channel (docs/peers.md), on node-local pools only: each node's driver serves the others
# on its container port named peer (--peer-listen), from the cluster CA in a Secret mounted at
# --peer-ca-dir that the peer-ca Job makes, and finds them by listing the node plugin's pods of its
# namespace (--peer-selector) unless --peer names them. The defaults are PeerConfig's.
PEER_PORT_NAME = "peer"
PEER_CA_DIR_DEFAULT = "/etc/blockpool/peer-ca"
PEER_SELECTOR_DEFAULT = "app.kubernetes.io/name=blockpool-node"
PEER_DISCOVERY_RULES = {("", "pods"): {"list"}}
PEER_CA_COMMAND = "peer-ca"
# In the workload's own namespace.
LEADER_ELECTION_RULES = {("coordination.k8s.io", "leases"): {"get", "watch", "list", "delete", "update", "create"}}
CAPACITY_RULES = {
    ("storage.k8s.io", "csistoragecapacities"): {"get", "list", "watch", "create", "update", "patch", "delete"}}
# Owner walk for --capacity-ownerref-level, per workload kind.
OWNER_LEVEL = {"Deployment": "2", "StatefulSet": "1", "DaemonSet": "1"}
OWNER_WALK_RULES = {
    "Deployment": {("", "pods"): {"get"}, ("apps", "replicasets"): {"get"}},
    "StatefulSet": {("", "pods"): {"get"}},
    "DaemonSet": {("", "pods"): {"get"}},
}

# The variants check_chart.py renders from the Helm chart: "helm overlays/x" with the values of
# overlays/x, opted in to what overlays/x is.
CHART_VARIANT_PREFIX = "helm "

passed = 0
failed = 0
failures = []


def layout(variant):
    """The layout of sidecars-deploy/ a variant deploys (a chart's render, that of its overlay)."""
    return variant.removeprefix(CHART_VARIANT_PREFIX)


def check(variant, ok, message):
    """Counts one check; records `message` (what is wrong) when it fails."""
    global passed, failed
    if ok:
        passed += 1
        if VERBOSE:
            print(f"ok   [{variant}] {message}")
    else:
        failed += 1
        failures.append(f"FAIL [{variant}] {message}")
        print(f"FAIL [{variant}] {message}", flush=True)
    return ok


def render(directory):
    proc = subprocess.run([KUSTOMIZE, "build", directory], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return None, proc.stderr.strip()
    return [d for d in yaml.safe_load_all(proc.stdout) if d], ""


def kind_of(objs, kind):
    return [o for o in objs if o.get("kind") == kind]


def name(o):
    return o.get("metadata", {}).get("name", "")


def namespace(o):
    return o.get("metadata", {}).get("namespace", "")


def image_repo(image):
    """registry/path/name[:tag][@digest] -> name"""
    ref = image.split("@", 1)[0]
    last = ref.rsplit("/", 1)[-1]
    return last.split(":", 1)[0]


def image_tag(image):
    ref = image.split("@", 1)[0]
    last = ref.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else ""


def parse_flags(container):
    """--flag=value / -flag=value / --flag (-> "true"), with $(VAR) expanded from env."""
    env = {e["name"]: e.get("value") for e in container.get("env", []) if "name" in e}
    flags = {}
    for arg in (container.get("command") or [])[1:] + (container.get("args") or []):
        arg = str(arg)
        if not arg.startswith("-"):
            continue
        key, _, value = arg.lstrip("-").partition("=")
        if not _:
            value = "true"
        value = re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                       lambda m: env.get(m.group(1)) if env.get(m.group(1)) is not None else m.group(0),
                       value)
        flags[key] = value
    return flags


def socket_path(address):
    if address.startswith("unix://"):
        return address[len("unix://"):]
    if address.startswith("unix:"):
        return address[len("unix:"):]
    return address


def mount_for(container, path):
    """The volumeMount of `container` that holds `path`, and the path inside that volume."""
    best = None
    for m in container.get("volumeMounts", []):
        mp = m["mountPath"].rstrip("/") or "/"
        if (path == mp or path.startswith(mp + "/") or mp == "/") and (
                best is None or len(mp) > len(best[0]["mountPath"].rstrip("/"))):
            best = (m, mp)
    if best is None:
        return None, None
    m, mp = best
    rel = posixpath.relpath(path, mp)
    if m.get("subPath"):
        rel = posixpath.join(m["subPath"], rel)
    return m, posixpath.normpath(rel)


def volume(pod_spec, vname):
    for v in pod_spec.get("volumes", []):
        if v.get("name") == vname:
            return v
    return None


def workloads(objs):
    out = []
    for o in objs:
        if o.get("kind") in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
            out.append((o, o["spec"]["template"]["spec"]))
        elif o.get("kind") == "Pod":
            out.append((o, o["spec"]))
    return out


def all_containers(pod_spec):
    return list(pod_spec.get("initContainers", [])) + list(pod_spec.get("containers", []))


def env_field_ref(container, var):
    for e in container.get("env", []):
        if e.get("name") == var:
            return e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
    return None


# ---------------------------------------------------------------- images
def check_images(variant, objs):
    for w, spec in workloads(objs):
        for c in all_containers(spec):
            image = c.get("image", "")
            where = f"{w['kind']}/{name(w)} container {c.get('name')}"
            pinned = bool(image) and ("@sha256:" in image or (image_tag(image) not in ("", "latest")))
            check(variant, pinned, f"{where}: image '{image}' is not pinned to a tag or digest (no tag or 'latest')")


# ---------------------------------------------------------------- RBAC
def rules_for(objs, sa_name, sa_ns):
    """(cluster-wide rules, rules in sa_ns) granted to a service account."""
    roles = {("ClusterRole", name(r)): r.get("rules", []) for r in kind_of(objs, "ClusterRole")}
    roles.update({("Role", name(r), namespace(r)): r.get("rules", []) for r in kind_of(objs, "Role")})

    def bound(binding):
        return any(s.get("kind") == "ServiceAccount" and s.get("name") == sa_name
                   and s.get("namespace", namespace(binding)) == sa_ns
                   for s in binding.get("subjects", []) or [])

    cluster, local = [], []
    for b in kind_of(objs, "ClusterRoleBinding"):
        if bound(b):
            cluster += roles.get(("ClusterRole", b["roleRef"]["name"]), [])
    for b in kind_of(objs, "RoleBinding"):
        if bound(b) and namespace(b) == sa_ns:
            ref = b["roleRef"]
            key = ("ClusterRole", ref["name"]) if ref["kind"] == "ClusterRole" else ("Role", ref["name"], namespace(b))
            local += roles.get(key, [])
    return cluster, local


def roles_bound(objs, sa_name, sa_ns):
    """(kind, name, namespace) of every Role and ClusterRole bound to a service account."""
    out = set()
    for b in kind_of(objs, "ClusterRoleBinding") + kind_of(objs, "RoleBinding"):
        if any(s.get("kind") == "ServiceAccount" and s.get("name") == sa_name
               and s.get("namespace", namespace(b)) == sa_ns for s in b.get("subjects", []) or []):
            ref = b["roleRef"]
            out.add((ref["kind"], ref["name"], "" if ref["kind"] == "ClusterRole" else namespace(b)))
    return out


def allowed(rules, group, resource, verb):
    for r in rules:
        if r.get("resourceNames"):
            continue
        if (group in r.get("apiGroups", []) or "*" in r.get("apiGroups", [])) and \
           (resource in r.get("resources", []) or "*" in r.get("resources", [])) and \
           (verb in r.get("verbs", []) or "*" in r.get("verbs", [])):
            return True
    return False


def check_rbac_covers(variant, who, rules, wanted, scope):
    for (group, resource), verbs in sorted(wanted.items()):
        missing = sorted(v for v in verbs if not allowed(rules, group, resource, v))
        check(variant, not missing,
              f"{who}: RBAC ({scope}) lacks {missing} on {resource}"
              f" in API group '{group or 'core'}'")


def check_rbac_narrow(variant, objs):
    """No wildcards; secrets only in the Roles of the peer-ca Job, whose exact rules check_peer_ca checks."""
    peer_ca_roles = set()
    for job, _pod, _c, _secret in peer_ca_jobs(objs):
        sa = job["spec"]["template"]["spec"].get("serviceAccountName", "default")
        peer_ca_roles |= roles_bound(objs, sa, namespace(job))
    for r in kind_of(objs, "ClusterRole") + kind_of(objs, "Role"):
        for rule in r.get("rules", []):
            wild = [f for f in ("apiGroups", "resources", "verbs") if "*" in rule.get(f, [])]
            check(variant, not wild,
                  f"{r['kind']}/{name(r)}: wildcard in {wild} grants more than any sidecar documents")
            check(variant, "secrets" not in rule.get("resources", [])
                  or (r["kind"], name(r), namespace(r)) in peer_ca_roles,
                  f"{r['kind']}/{name(r)}: grants access to secrets, which only the peer-ca Job needs "
                  "(no StorageClass here uses secrets)")


def check_group_snapshots(variant, where, flags, cluster_rules):
    """The CSIVolumeGroupSnapshot gate on exactly in the variants that opt in, with the rules it needs;
    without it, none of them."""
    gate = GROUP_SNAPSHOT_GATE in flags.get("feature-gates", "").split(",")
    if layout(variant) in GROUP_SNAPSHOT_VARIANTS:
        check(variant, gate, f"{where}: csi-snapshotter needs --feature-gates={GROUP_SNAPSHOT_GATE} "
              "(this variant turns group snapshots on)")
    else:
        check(variant, not gate, f"{where}: csi-snapshotter must not run with --feature-gates={GROUP_SNAPSHOT_GATE}: "
              "it then snapshots nothing on a cluster without the groupsnapshot.storage.k8s.io CRDs "
              "(group snapshots are the opt-in of components/group-snapshots)")
    if gate:
        check_rbac_covers(variant, f"{where} csi-snapshotter group snapshots", cluster_rules, GROUP_SNAPSHOT_RULES,
                          "cluster")
    else:
        for group, resource in sorted(GROUP_SNAPSHOT_RULES):
            granted = sorted(v for v in ("get", "list", "watch", "create", "update", "patch", "delete")
                             if allowed(cluster_rules, group, resource, v))
            check(variant, not granted,
                  f"{where}: grants {granted} on {resource} in API group '{group}' without "
                  f"--feature-gates={GROUP_SNAPSHOT_GATE}, which alone needs them")


def check_snapshot_metadata(variant, objs, w, pod, by_repo, cluster_rules):
    """The external-snapshot-metadata sidecar exactly in the variants that opt in: with its RBAC,
    its certificate and key from a Secret, and a Service of the workload's namespace that sends
    to its gRPC port. Without it, none of the rules only it needs."""
    where = f"{w['kind']}/{name(w)}"
    sidecars = by_repo.get("csi-snapshot-metadata", [])
    if layout(variant) not in SNAPSHOT_METADATA_VARIANTS:
        check(variant, not sidecars, f"{where}: runs csi-snapshot-metadata, which needs a TLS Secret and a "
              "SnapshotMetadataService object (the opt-in of components/snapshot-metadata)")
        # (the snapshots' rules are other sidecars' too)
        granted = sorted(f"{resource}:{v}" for (group, resource), verbs in SNAPSHOT_METADATA_RULES.items()
                         if group != "snapshot.storage.k8s.io" for v in verbs
                         if allowed(cluster_rules, group, resource, v))
        check(variant, not granted, f"{where}: grants {granted} without the csi-snapshot-metadata sidecar")
        return
    if not check(variant, len(sidecars) == 1, f"{where}: expected one csi-snapshot-metadata sidecar, "
                 f"found {len(sidecars)} (this variant turns changed block tracking on)"):
        return
    c = sidecars[0]
    flags = parse_flags(c)
    check_rbac_covers(variant, f"{where} csi-snapshot-metadata", cluster_rules, SNAPSHOT_METADATA_RULES, "cluster")
    for flag in ("tls-cert", "tls-key"):
        m, _rel = mount_for(c, flags.get(flag, ""))
        secret = (volume(pod, m["name"]) or {}).get("secret") if m else None
        check(variant, bool(flags.get(flag)) and bool(secret),
              f"{where}: csi-snapshot-metadata --{flag} must be a file of a Secret volume (got {flags.get(flag)!r})")
    port = int(flags.get("port", "50051"))
    named = {p.get("name"): p.get("containerPort") for p in c.get("ports", []) or []}
    labels = w["spec"]["template"]["metadata"].get("labels", {}) or {}
    served = [s for s in kind_of(objs, "Service") if namespace(s) == namespace(w)
              and (s["spec"].get("selector") or {}).items() <= labels.items() and s["spec"].get("selector")
              and any(named.get(sp.get("targetPort"), sp.get("targetPort")) == port for sp in s["spec"]["ports"])]
    check(variant, len(served) == 1, f"{where}: no Service in {namespace(w)} selects the pod and sends to "
          f"csi-snapshot-metadata's --port {port} (backup tools reach it through one)")


# ---------------------------------------------------------------- driver deployment
def check_metrics(variant, where, workload, drv, dflags):
    """The driver serves its metrics on a named port, announced to Prometheus, or (without --http-endpoint,
    the chart's metrics.enabled=false) announces none; its log format is one it takes."""
    http = dflags.get("http-endpoint", "")
    port = http.rsplit(":", 1)[-1] if ":" in http else ""
    ports = {p.get("name"): p.get("containerPort") for p in drv.get("ports", []) or []}
    template = (workload.get("spec", {}).get("template") or workload).get("metadata") or {}
    annotations = template.get("annotations") or {}
    if "http-endpoint" not in dflags:
        check(variant, METRICS_PORT_NAME not in ports and not any(a.startswith("prometheus.io/") for a in annotations),
              f"{where}: the driver serves no metrics (no --http-endpoint), but its pod announces them: "
              f"port '{METRICS_PORT_NAME}' {ports.get(METRICS_PORT_NAME)}, annotations {annotations}")
    else:
        check(variant, port.isdigit() and ports.get(METRICS_PORT_NAME) == int(port),
              f"{where}: the driver's --http-endpoint ({http!r}) must serve on its container port "
              f"named '{METRICS_PORT_NAME}' ({ports.get(METRICS_PORT_NAME)})")
        check(variant, annotations.get("prometheus.io/scrape") == "true"
              and annotations.get("prometheus.io/port") == port
              and annotations.get("prometheus.io/path", "/metrics") == "/metrics",
              f"{where}: the pod's prometheus.io/scrape, port and path annotations must point at the driver's "
              f"metrics (port {port!r}), have {annotations}")
    log_format = dflags.get("log-format", "text")
    check(variant, log_format in LOG_FORMATS,
          f"{where}: --log-format {log_format!r} is not one of {sorted(LOG_FORMATS)}")


def check_pod_monitors(variant, objs):
    """Each PodMonitor selects the driver's pods, and scrapes ports they have, the driver's metrics among them."""
    pods = [(name(w), (w.get("spec", {}).get("template", {}).get("metadata") or {}).get("labels") or {}, pod)
            for w, pod in workloads(objs)
            if w["kind"] != "Job" and any(image_repo(c.get("image", "")) == DRIVER_IMAGE
                                          for c in pod.get("containers", []))]
    for pm in kind_of(objs, "PodMonitor"):
        where = f"PodMonitor/{name(pm)}"
        spec = pm.get("spec") or {}
        selected = [(n, pod) for n, labels, pod in pods if selects(spec.get("selector") or {}, labels)]
        check(variant, len(selected) == len(pods) and namespace(pm) in {namespace(w) for w, _ in workloads(objs)},
              f"{where}: selects {sorted(n for n, _ in selected)} of the driver's pods {sorted(n for n, _, _ in pods)}")
        names = {p.get("name") for _, pod in selected
                 for c in pod.get("containers", []) for p in c.get("ports", []) or []}
        wanted = [e.get("port") for e in spec.get("podMetricsEndpoints", [])]
        check(variant, METRICS_PORT_NAME in wanted, f"{where}: does not scrape the driver's port '{METRICS_PORT_NAME}'")
        check(variant, set(wanted) <= names,
              f"{where}: scrapes ports no selected pod has: {sorted(set(wanted) - names)}")


def selects(selector, labels):
    """Whether a label selector (matchLabels, matchExpressions with In/NotIn/Exists/DoesNotExist) selects labels."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        ok = {"In": labels.get(key) in values, "NotIn": labels.get(key) not in values,
              "Exists": key in labels, "DoesNotExist": key not in labels}.get(op, False)
        if not ok:
            return False
    return bool(selector)


def check_deployment(variant, objs):
    check_images(variant, objs)
    check_rbac_narrow(variant, objs)

    drivers = kind_of(objs, "CSIDriver")
    check(variant, len(drivers) == 1, f"expected exactly one CSIDriver, found {len(drivers)}")
    if not drivers:
        return
    csidriver = drivers[0]
    driver_name = name(csidriver)
    spec = csidriver.get("spec", {})
    shared = any(w["kind"] == "Deployment" and DRIVER_IMAGE in {image_repo(c.get("image", "")) for c in p["containers"]}
                 for w, p in workloads(objs))
    if shared:
        check(variant, spec.get("attachRequired") is True,
              "CSIDriver: attachRequired must be true on a shared pool (ControllerPublishVolume guards single-node "
              "access)")
    else:
        check(variant, spec.get("attachRequired") is False,
              "CSIDriver: attachRequired must be false on node-local pools (the driver publishes nothing there and "
              "no attacher runs)")
    check(variant, spec.get("podInfoOnMount") is True,
          "CSIDriver: podInfoOnMount must be true (inline ephemeral volumes)")
    check(variant, spec.get("fsGroupPolicy") == "File", "CSIDriver: fsGroupPolicy must be File")
    check(variant, spec.get("storageCapacity") is True,
          "CSIDriver: storageCapacity must be true (the driver serves GetCapacity)")
    modes = set(spec.get("volumeLifecycleModes", []))
    check(variant, modes == {"Persistent", "Ephemeral"},
          f"CSIDriver: volumeLifecycleModes must be Persistent and Ephemeral, got {sorted(modes)}")

    # --- namespace admits privileged pods
    ns_names = {name(n): n for n in kind_of(objs, "Namespace")}

    # --- StorageClasses
    classes = [sc for sc in kind_of(objs, "StorageClass") if sc.get("provisioner") == driver_name]
    all_classes = kind_of(objs, "StorageClass")
    check(variant, len(all_classes) >= 2, f"expected StorageClasses for ext4 and xfs, found {len(all_classes)}")
    for sc in all_classes:
        where = f"StorageClass/{name(sc)}"
        check(variant, sc.get("provisioner") == driver_name,
              f"{where}: provisioner '{sc.get('provisioner')}' differs from the CSIDriver name '{driver_name}'")
        check(variant, sc.get("allowVolumeExpansion") is True, f"{where}: allowVolumeExpansion must be true")
        check(variant, sc.get("volumeBindingMode") == "WaitForFirstConsumer",
              f"{where}: volumeBindingMode must be WaitForFirstConsumer (topology and capacity tracking)")
        params = sc.get("parameters", {}) or {}
        fs = params.get("csi.storage.k8s.io/fstype", params.get("fsType", "ext4"))
        check(variant, fs in FS_TYPES, f"{where}: file system '{fs}' is not one of {sorted(FS_TYPES)}")
        unknown = sorted(k for k in params
                         if not k.startswith("csi.storage.k8s.io/") and k != "fsType" and k not in MUTABLE_PARAMETERS)
        check(variant, not unknown, f"{where}: parameters {unknown} are not accepted by the driver")
        check(variant, params.get("allocation", "sparse") in ALLOCATIONS,
              f"{where}: allocation '{params.get('allocation')}' is not one of {sorted(ALLOCATIONS)}")
    fs_of = {name(sc): (sc.get("parameters") or {}).get("csi.storage.k8s.io/fstype") for sc in classes}
    check(variant, {"ext4", "xfs"} <= set(fs_of.values()), f"need one StorageClass per file system, have {fs_of}")
    defaults = [name(sc) for sc in all_classes
                if (sc.get("metadata", {}).get("annotations") or {}).get(
                    "storageclass.kubernetes.io/is-default-class") == "true"]
    check(variant, len(defaults) == 1 and fs_of.get(defaults[0]) == "ext4",
          f"exactly one default StorageClass, with ext4, expected; defaults: {defaults}")

    # --- VolumeSnapshotClass
    vscs = kind_of(objs, "VolumeSnapshotClass")
    check(variant, len(vscs) >= 1, "no VolumeSnapshotClass")
    for vsc in vscs:
        check(variant, vsc.get("driver") == driver_name,
              f"VolumeSnapshotClass/{name(vsc)}: driver '{vsc.get('driver')}' "
              f"differs from the CSIDriver name '{driver_name}'")

    # --- workloads
    modes_seen = {}
    for w, pod in workloads(objs):
        kind, wname, wns = w["kind"], name(w), namespace(w)
        if kind == "Job":
            continue  # the peer-ca Job runs the driver's image for one command (check_peer_ca_job)
        where = f"{kind}/{wname}"
        containers = pod.get("containers", [])
        by_repo = {}
        for c in containers:
            by_repo.setdefault(image_repo(c.get("image", "")), []).append(c)
        drivers_here = by_repo.get(DRIVER_IMAGE, [])
        if not drivers_here:
            continue
        check(variant, len(drivers_here) == 1, f"{where}: expected one driver container, found {len(drivers_here)}")
        drv = drivers_here[0]
        dflags = parse_flags(drv)
        mode = dflags.get("mode", "all")
        modes_seen[mode] = (w, pod)
        scope = dflags.get("pool-scope", "node")
        if kind == "DaemonSet":
            check(variant, (scope, mode) in (("node", "all"), ("shared", "node")),
                  f"{where}: the node plugin runs --pool-scope={scope} --mode={mode}; expected node/all (the "
                  "controller service for the per-node sidecars) or shared/node")
        else:
            check(variant, scope == "shared",
                  f"{where}: a controller Deployment serves the pool of every node: --pool-scope=shared, not {scope}")
        if kind == "DaemonSet":
            check_node_layout(variant, objs, w, pod, by_repo, drv, scope == "node")

        check(variant, wns in ns_names, f"{where}: namespace '{wns}' is not part of the deployment")
        if wns in ns_names and (pod.get("containers") and any(
                (c.get("securityContext") or {}).get("privileged") for c in containers)):
            labels = ns_names[wns].get("metadata", {}).get("labels", {}) or {}
            check(variant, labels.get("pod-security.kubernetes.io/enforce") == "privileged",
                  f"Namespace/{wns}: runs a privileged pod but does not enforce the 'privileged' Pod Security level")

        # resources on every container
        for c in all_containers(pod):
            res = c.get("resources", {}) or {}
            missing = [f"{k}.{r}" for k in ("requests", "limits") for r in ("cpu", "memory")
                       if r not in (res.get(k) or {})]
            check(variant, not missing, f"{where} container {c['name']}: resources missing {missing}")

        # sidecar versions
        for repo, want in SIDECAR_VERSIONS.items():
            for c in by_repo.get(repo, []):
                tag = image_tag(c["image"])
                check(variant, tag == want,
                      f"{where} container {c['name']}: {repo} is {tag}, but the RBAC here is for {want}")

        # driver name and the socket
        check(variant, dflags.get("driver-name", "blockpool.csi.dev") == driver_name,
              f"{where}: --driver-name '{dflags.get('driver-name')}' differs from the CSIDriver name '{driver_name}'")
        endpoint = dflags.get("endpoint")
        if endpoint is None:
            endpoint = next((e.get("value") for e in drv.get("env", []) if e.get("name") == "CSI_ENDPOINT"), None)
        if not check(variant, bool(endpoint) and "$(" not in endpoint,
                     f"{where}: the driver's --endpoint is not set to a resolvable value ({endpoint!r})"):
            continue
        sock = socket_path(endpoint)
        dmount, drel = mount_for(drv, posixpath.dirname(sock))
        if not check(variant, dmount is not None,
                     f"{where}: the driver's socket directory {posixpath.dirname(sock)} "
                     "is not on a volume the sidecars can share"):
            continue
        for c in containers:
            if c is drv:
                continue
            cflags = parse_flags(c)
            if image_repo(c.get("image", "")) in SIDECAR_VERSIONS:
                check(variant, "csi-address" in cflags, f"{where} container {c['name']}: no --csi-address")
            if "csi-address" not in cflags:
                continue
            addr = socket_path(cflags["csi-address"])
            cmount, crel = mount_for(c, posixpath.dirname(addr))
            same = (cmount is not None and cmount["name"] == dmount["name"] and crel == drel
                    and posixpath.basename(addr) == posixpath.basename(sock))
            check(variant, same,
                  f"{where} container {c['name']}: --csi-address {addr} "
                  f"is not the socket the driver listens on ({endpoint})")

        # liveness probe wired to the livenessprobe sidecar
        probe = (drv.get("livenessProbe") or {}).get("httpGet") or {}
        port = probe.get("port")
        ports = {p.get("name"): p.get("containerPort") for p in drv.get("ports", []) or []}
        check(variant, probe.get("path") == "/healthz" and isinstance(port, str) and port in ports,
              f"{where}: the driver's livenessProbe must GET /healthz on a named port of the driver container")
        lps = by_repo.get("livenessprobe", [])
        check(variant, len(lps) == 1, f"{where}: expected one livenessprobe sidecar, found {len(lps)}")
        if lps and port in ports:
            lflags = parse_flags(lps[0])
            health = lflags.get("health-port") or lflags.get("http-endpoint", ":9808").rsplit(":", 1)[-1]
            check(variant, str(ports[port]) == str(health),
                  f"{where}: livenessProbe port {port}={ports[port]} "
                  f"is not where the livenessprobe sidecar listens ({health})")

        if mode in ("node", "all"):
            check(variant, kind == "DaemonSet", f"{where}: the node plugin (--mode={mode}) must run as a DaemonSet")
            check(variant, (drv.get("securityContext") or {}).get("privileged") is True,
                  f"{where}: the node driver container must be privileged")
            km, _krel = mount_for(drv, KUBELET_DIR)
            kvol = volume(pod, km["name"]) if km else None
            check(variant, km is not None and km["mountPath"].rstrip("/") == KUBELET_DIR
                  and km.get("mountPropagation") == "Bidirectional"
                  and (kvol or {}).get("hostPath", {}).get("path", "").rstrip("/") == KUBELET_DIR,
                  f"{where}: {KUBELET_DIR} must be the host's, mounted with mountPropagation: Bidirectional")
            dm = next((m for m in drv.get("volumeMounts", []) if m["mountPath"] == "/dev"), None)
            dvol = volume(pod, dm["name"]) if dm else None
            check(variant, dm is not None and (dvol or {}).get("hostPath", {}).get("path") == "/dev",
                  f"{where}: the host's /dev must be mounted at /dev (loop devices)")
            # I/O limits: the host's cgroups where --cgroup-root says, in the driver's container alone
            cgroup_root = dflags.get("cgroup-root", "/sys/fs/cgroup")
            cm = next((m for m in drv.get("volumeMounts", []) if m["mountPath"].rstrip("/") == cgroup_root), None)
            cvol = volume(pod, cm["name"]) if cm else None
            check(variant, cm is not None and not cm.get("readOnly")
                  and (cvol or {}).get("hostPath", {}).get("path", "").rstrip("/") == "/sys/fs/cgroup",
                  f"{where}: --cgroup-root {cgroup_root} must be the host's /sys/fs/cgroup, mounted read-write")
            others = [c["name"] for c in pod["containers"] if c is not drv and cm is not None
                      and any(m["name"] == cm["name"] for m in c.get("volumeMounts", []))]
            check(variant, not others, f"{where}: only the driver mounts the host's cgroups, not {others}")
            check(variant, env_field_ref(drv, "KUBE_NODE_NAME") == "spec.nodeName"
                  and "KUBE_NODE_NAME" in " ".join(drv.get("args", [])),
                  f"{where}: --node-id must come from spec.nodeName (downward API)")
            # registrar
            regs = by_repo.get("csi-node-driver-registrar", [])
            check(variant, len(regs) == 1, f"{where}: expected one node-driver-registrar, found {len(regs)}")
            dvolume = volume(pod, dmount["name"]) or {}
            host_dir = (dvolume.get("hostPath") or {}).get("path", "")
            check(variant, bool(host_dir),
                  f"{where}: the node socket directory must be a hostPath (kubelet connects to it)")
            host_sock = posixpath.normpath(posixpath.join(host_dir, drel, posixpath.basename(sock)))
            check(variant, posixpath.normpath(host_dir) == f"{KUBELET_DIR}/plugins/{driver_name}",
                  f"{where}: the socket directory {host_dir} must be {KUBELET_DIR}/plugins/{driver_name}")
            for reg in regs:
                rflags = parse_flags(reg)
                path = rflags.get("kubelet-registration-path", "")
                check(variant, path == host_sock,
                      f"{where}: --kubelet-registration-path {path} "
                      f"is not the driver's socket on the host ({host_sock})")
                rm = next((m for m in reg.get("volumeMounts", []) if m["mountPath"] == "/registration"), None)
                rvol = volume(pod, rm["name"]) if rm else None
                check(variant,
                      (rvol or {}).get("hostPath", {}).get("path", "").rstrip("/") == f"{KUBELET_DIR}/plugins_registry",
                      f"{where}: the registrar needs {KUBELET_DIR}/plugins_registry mounted at /registration")
            check(variant, pod.get("automountServiceAccountToken") is False,
                  f"{where}: the node pod mounts the service account token only into the sidecars that need it")

        if mode in ("controller", "all") and kind != "DaemonSet":
            present = [s for s in CONTROLLER_SIDECARS if s in by_repo]
            check(variant, present == list(CONTROLLER_SIDECARS),
                  f"{where}: controller sidecars missing: {sorted(set(CONTROLLER_SIDECARS) - set(present))}")
            sa = pod.get("serviceAccountName", "default")
            cluster_rules, local_rules = rules_for(objs, sa, wns)
            for s in present:
                c = by_repo[s][0]
                cflags = parse_flags(c)
                check_rbac_covers(variant, f"{where} {s} (ServiceAccount {sa})", cluster_rules, CLUSTER_RULES[s],
                                  "cluster")
                check(variant, cflags.get("leader-election") == "true",
                      f"{where} container {s}: --leader-election=true is needed ({kind} replicas can be more than one)")
                if cflags.get("leader-election") == "true":
                    check_rbac_covers(variant, f"{where} {s} leader election", local_rules, LEADER_ELECTION_RULES,
                                      f"namespace {wns}")
                if s == "csi-provisioner":
                    check_provisioner(variant, where, kind, wns, c, cflags, local_rules, local_rules + cluster_rules)
                if s == "csi-snapshotter":
                    check_group_snapshots(variant, where, cflags, cluster_rules)
            check_snapshot_metadata(variant, objs, w, pod, by_repo, cluster_rules)

        check_metrics(variant, where, w, drv, dflags)

        # the pool directory is on a volume
        pool_dir = dflags.get("pool-dir", "/var/lib/blockpool")
        pm = next((m for m in drv.get("volumeMounts", []) if m["mountPath"].rstrip("/") == pool_dir.rstrip("/")), None)
        pvol = volume(pod, pm["name"]) if pm else None
        check(variant, pvol is not None and "emptyDir" not in pvol,
              f"{where}: --pool-dir {pool_dir} must be a mounted persistent volume (hostPath or a shared file system)")

    check(variant, "controller" in modes_seen or "all" in modes_seen, "no driver workload runs --mode=controller")
    check(variant, "node" in modes_seen or "all" in modes_seen, "no driver workload runs --mode=node")
    check_pod_monitors(variant, objs)

    # the node service account of a shared pool has no roles
    if "node" in modes_seen:
        w, pod = modes_seen["node"]
        sa = pod.get("serviceAccountName", "default")
        cluster_rules, local_rules = rules_for(objs, sa, namespace(w))
        check(variant, not cluster_rules and not local_rules,
              f"ServiceAccount {sa} of the node plugin is bound to roles it does not need")
    return driver_name, {name(sc) for sc in all_classes}, {name(v) for v in vscs}


def check_provisioner(variant, where, kind, wns, c, cflags, capacity_rules, owner_rules):
    """csi-provisioner's flags, environment and RBAC for CreateVolume's metadata and storage capacity tracking,
    its CSIStorageCapacity objects owned by the workload of `kind`."""
    check(variant, cflags.get("extra-create-metadata") == "true",
          f"{where}: csi-provisioner needs --extra-create-metadata")
    check(variant, cflags.get("enable-capacity") == "true",
          f"{where}: csi-provisioner needs --enable-capacity (the driver serves GetCapacity)")
    check(variant, cflags.get("capacity-ownerref-level") == OWNER_LEVEL[kind],
          f"{where}: csi-provisioner --capacity-ownerref-level must be {OWNER_LEVEL[kind]} for a {kind}")
    check(variant, env_field_ref(c, "NAMESPACE") == "metadata.namespace"
          and env_field_ref(c, "POD_NAME") == "metadata.name",
          f"{where}: csi-provisioner needs env NAMESPACE and POD_NAME from the downward API "
          "for capacity tracking")
    check_rbac_covers(variant, f"{where} csi-provisioner capacity", capacity_rules, CAPACITY_RULES,
                      f"namespace {wns}")
    check_rbac_covers(variant, f"{where} csi-provisioner owner walk", owner_rules, OWNER_WALK_RULES[kind],
                      f"namespace {wns}")


def check_node_layout(variant, objs, w, pod, by_repo, drv, node_local):
    """The node DaemonSet: with node-local pools, the node-deployed sidecars with their flags, the peer
    channel, a token for them alone and exactly the RBAC they need; with a shared pool, none of them and
    no token."""
    where = f"{w['kind']}/{name(w)}"
    present = [s for s in NODE_SIDECARS if s in by_repo]
    token_volumes = {v["name"] for v in pod.get("volumes", [])
                     if any("serviceAccountToken" in src for src in (v.get("projected") or {}).get("sources", []))}

    def has_token(c):
        return any(m["mountPath"].rstrip("/") == SERVICE_ACCOUNT_TOKEN_DIR and m["name"] in token_volumes
                   for m in c.get("volumeMounts", []))

    sa = pod.get("serviceAccountName", "default")
    cluster_rules, local_rules = rules_for(objs, sa, namespace(w))
    lists_pods = check_peer_channel(variant, objs, w, pod, drv, node_local, local_rules)
    if lists_pods:
        check(variant, has_token(drv), f"{where}: the driver lists the node plugin's pods to find the other nodes' "
              f"peer channel: it needs the service account token mounted at {SERVICE_ACCOUNT_TOKEN_DIR}")
    else:
        check(variant, not has_token(drv), f"{where}: the privileged driver container must not get an API token "
              "(it lists no pods: no peer channel, or --peer names the other nodes)")
    if not node_local:
        check(variant, not present, f"{where}: a shared pool's node plugin runs no API sidecar, found {present}")
        check(variant, not token_volumes, f"{where}: a shared pool's node plugin mounts no service account token")
        return
    check(variant, present == list(NODE_SIDECARS),
          f"{where}: node-local pools need {list(NODE_SIDECARS)} beside each node plugin, found {present}")
    wanted_cluster, wanted_local = {}, {}
    if lists_pods:
        for key, verbs in PEER_DISCOVERY_RULES.items():
            wanted_local.setdefault(key, set()).update(verbs)
    for c in all_containers(pod):
        repo = image_repo(c.get("image", ""))
        if repo not in NODE_SIDECARS and c is not drv:
            check(variant, not has_token(c), f"{where} container {c['name']}: talks to no API, needs no token")
    for s in present:
        c = by_repo[s][0]
        cflags = parse_flags(c)
        check(variant, has_token(c), f"{where} container {s}: needs the service account token mounted at "
              f"{SERVICE_ACCOUNT_TOKEN_DIR}")
        check_rbac_covers(variant, f"{where} {s} (ServiceAccount {sa})", cluster_rules, NODE_RULES[s], "cluster")
        for key, verbs in NODE_RULES[s].items():
            wanted_cluster.setdefault(key, set()).update(verbs)
        if s in ("csi-provisioner", "csi-snapshotter"):
            check(variant, cflags.get("node-deployment") == "true" and env_field_ref(c, "NODE_NAME") == "spec.nodeName",
                  f"{where} container {s}: needs --node-deployment and env NODE_NAME from spec.nodeName")
            check(variant, cflags.get("leader-election", "false") == "false",
                  f"{where} container {s}: runs on every node for its node alone, without leader election")
        if s == "csi-provisioner":
            check_provisioner(variant, where, "DaemonSet", namespace(w), c, cflags, local_rules, local_rules)
            check(variant, cflags.get("strict-topology") == "true",
                  f"{where}: csi-provisioner needs --strict-topology (CreateVolume asks for the selected node alone)")
            for table in (CAPACITY_RULES, OWNER_WALK_RULES["DaemonSet"]):
                for key, verbs in table.items():
                    wanted_local.setdefault(key, set()).update(verbs)
        if s == "csi-snapshotter":
            check_group_snapshots(variant, where, cflags, cluster_rules)
        if s == "csi-resizer":
            check(variant, cflags.get("leader-election") == "true",
                  f"{where} container {s}: one resizer acts for the cluster: --leader-election=true")
            check_rbac_covers(variant, f"{where} {s} leader election", local_rules, LEADER_ELECTION_RULES,
                              f"namespace {namespace(w)}")
            for key, verbs in LEADER_ELECTION_RULES.items():
                wanted_local.setdefault(key, set()).update(verbs)
    check_rbac_nothing_more(variant, f"{where} (ServiceAccount {sa})", cluster_rules, wanted_cluster, "cluster")
    check_rbac_nothing_more(variant, f"{where} (ServiceAccount {sa})", local_rules, wanted_local,
                            f"namespace {namespace(w)}")


def check_peer_channel(variant, objs, w, pod, drv, node_local, local_rules):
    """The peer channel of the node DaemonSet: on node-local pools its port, its CA's Secret at --peer-ca-dir
    made by the peer-ca Job, the pods --peer-selector lists and the NetworkPolicy that lets only them in; on a
    shared pool none of it. Whether the driver lists pods (and so needs a token)."""
    where = f"{w['kind']}/{name(w)}"
    ns = namespace(w)
    dflags = parse_flags(drv)
    listen = dflags.get("peer-listen", "")
    ports = {p.get("name"): p.get("containerPort") for p in drv.get("ports", []) or []}
    jobs = peer_ca_jobs(objs)
    if not node_local:
        check(variant, listen == "", f"{where}: a shared pool has no peer channel (the driver refuses --peer-listen "
              f"with --pool-scope=shared), got --peer-listen={listen!r}")
        check(variant, PEER_PORT_NAME not in ports, f"{where}: a shared pool's node plugin serves no port "
              f"'{PEER_PORT_NAME}'")
        check(variant, not any("secret" in v for v in pod.get("volumes", [])),
              f"{where}: a shared pool's node plugin mounts no peer CA Secret")
        check(variant, not jobs, f"a shared pool has no peer channel, but the peer-ca Job "
              f"{[name(j) for j, _, _, _ in jobs]} makes its CA")
        check(variant, not peer_policies(objs, ns), f"a shared pool has no peer channel, but NetworkPolicy "
              f"{[name(np) for np in peer_policies(objs, ns)]} names the port '{PEER_PORT_NAME}'")
        return False
    if not check(variant, listen != "", f"{where}: node-local pools need the peer channel (--peer-listen): a "
                 "restore, clone or move on another node pulls the image from the node that holds it"):
        return False
    port = listen.rsplit(":", 1)[-1]
    check(variant, port.isdigit() and ports.get(PEER_PORT_NAME) == int(port),
          f"{where}: the driver's --peer-listen ({listen!r}) must serve on its container port named "
          f"'{PEER_PORT_NAME}' ({ports.get(PEER_PORT_NAME)})")

    ca_dir = dflags.get("peer-ca-dir", PEER_CA_DIR_DEFAULT).rstrip("/")
    m = next((m for m in drv.get("volumeMounts", []) if m["mountPath"].rstrip("/") == ca_dir), None)
    secret = ((volume(pod, m["name"]) if m else None) or {}).get("secret") or {}
    check(variant, bool(secret.get("secretName")) and m.get("readOnly") is True and not m.get("subPath")
          and secret.get("optional", False) is False,
          f"{where}: --peer-ca-dir {ca_dir} must be where a Secret volume is mounted, readOnly, whole and not "
          "optional (the pod waits for the CA)")
    wanted = f"{ns}/{secret.get('secretName')}"
    made = [(job, jpod, c) for job, jpod, c, target in jobs if target == wanted]
    if check(variant, len(made) == 1, f"{where}: the peer CA's Secret {wanted} is made by no peer-ca Job "
             f"(peer-ca --secret {wanted}); the Jobs make {[target for _, _, _, target in jobs]}"):
        check_peer_ca_job(variant, objs, *made[0], secret.get("secretName"))

    check_peer_network_policy(variant, objs, w, ports.get(PEER_PORT_NAME))
    if "peer" in dflags:
        return False  # --peer names the other nodes: nothing to list
    selector = dflags.get("peer-selector", PEER_SELECTOR_DEFAULT)
    labels = w["spec"]["template"]["metadata"].get("labels") or {}
    check(variant, equality_selects(selector, labels),
          f"{where}: --peer-selector {selector!r} does not select the node plugin's own pods (labels {labels})")
    check_rbac_covers(variant, f"{where} driver finding its peers", local_rules, PEER_DISCOVERY_RULES,
                      f"namespace {ns}")
    return True


def equality_selects(selector, labels):
    """Whether a label selector of k=v, k==v, k!=v, k and !k terms selects labels (any other term: no)."""
    for term in selector.split(","):
        term = term.strip()
        if "!=" in term:
            k, v = term.split("!=", 1)
            ok = labels.get(k.strip()) != v.strip()
        elif "=" in term:
            k, v = term.replace("==", "=").split("=", 1)
            ok = labels.get(k.strip()) == v.strip()
        elif term.startswith("!"):
            ok = term[1:].strip() not in labels
        else:
            ok = bool(term) and " " not in term and term in labels
        if not ok:
            return False
    return True


def peer_ca_jobs(objs):
    """(Job, pod spec, container, the NAMESPACE/NAME of its --secret) of each Job that runs the driver's
    peer-ca command, $(VAR)s expanded from the container's env (metadata.namespace: the Job's)."""
    out = []
    for w, pod in workloads(objs):
        if w["kind"] != "Job":
            continue
        for c in pod.get("containers", []):
            args = [str(a) for a in c.get("args") or []]
            if image_repo(c.get("image", "")) != DRIVER_IMAGE or c.get("command") or args[:1] != [PEER_CA_COMMAND]:
                continue
            env = {e["name"]: e["value"] if "value" in e else
                   {"metadata.namespace": namespace(w)}.get(env_field_ref(c, e["name"]), "")
                   for e in c.get("env", [])}
            target = ""
            for i, a in enumerate(args):
                if a == "--secret" and i + 1 < len(args):
                    target = args[i + 1]
                elif a.startswith("--secret="):
                    target = a.partition("=")[2]
            target = re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                            lambda m, env=env: env.get(m.group(1), m.group(0)), target)
            out.append((w, pod, c, target))
    return out


def check_peer_ca_job(variant, objs, job, pod, c, secret_name):
    """The Job that makes the peer CA's Secret: retried on failure, removed once done, bounded, unprivileged,
    with a token whose Roles may create secrets and get that one Secret, and nothing else."""
    where = f"Job/{name(job)}"
    spec = job.get("spec") or {}
    check(variant, pod.get("restartPolicy") == "OnFailure" and "backoffLimit" in spec
          and "ttlSecondsAfterFinished" in spec,
          f"{where}: needs restartPolicy OnFailure, a backoffLimit and a ttlSecondsAfterFinished (its pod template "
          "cannot change: a Job that stays would refuse the next apply's)")
    res = c.get("resources", {}) or {}
    missing = [f"{k}.{r}" for k in ("requests", "limits") for r in ("cpu", "memory") if r not in (res.get(k) or {})]
    check(variant, not missing, f"{where} container {c['name']}: resources missing {missing}")
    psc, csc = pod.get("securityContext") or {}, c.get("securityContext") or {}
    check(variant, (csc.get("runAsNonRoot", psc.get("runAsNonRoot")) is True and not csc.get("privileged")
                    and csc.get("allowPrivilegeEscalation") is False),
          f"{where}: writes only a Secret: runAsNonRoot, not privileged, allowPrivilegeEscalation false")
    mounted = any(m["mountPath"].rstrip("/") == SERVICE_ACCOUNT_TOKEN_DIR for m in c.get("volumeMounts", []))
    check(variant, pod.get("automountServiceAccountToken") is True or mounted,
          f"{where}: calls the API server: needs its service account token")
    sa = pod.get("serviceAccountName", "default")
    cluster_rules, local_rules = rules_for(objs, sa, namespace(job))
    check(variant, not cluster_rules, f"{where} (ServiceAccount {sa}): needs no cluster-wide role")
    granted = {(verb, tuple(r.get("resourceNames") or ())) for r in local_rules
               for group in r.get("apiGroups", []) for resource in r.get("resources", [])
               for verb in r.get("verbs", []) if (group, resource) == ("", "secrets")}
    other = sorted({f"{resource} ({group or 'core'})" for r in local_rules for group in r.get("apiGroups", [])
                    for resource in r.get("resources", []) if (group, resource) != ("", "secrets")})
    wanted = {("create", ()), ("get", (secret_name,))}
    check(variant, granted == wanted and not other,
          f"{where} (ServiceAccount {sa}): RBAC (namespace {namespace(job)}) must be exactly create secrets and get "
          f"the secret {secret_name} by name, has {sorted(granted)} on secrets and {other}")


def peer_policies(objs, ns):
    """The NetworkPolicies of the namespace that name the peer port."""
    return [np for np in kind_of(objs, "NetworkPolicy") if namespace(np) == ns
            and any(p.get("port") == PEER_PORT_NAME for rule in (np.get("spec") or {}).get("ingress") or []
                    for p in rule.get("ports") or [])]


def check_peer_network_policy(variant, objs, w, peer_port):
    """A NetworkPolicy lets the node plugin's pods reach the peer port, and none lets any other pod."""
    where = f"{w['kind']}/{name(w)}"
    labels = w["spec"]["template"]["metadata"].get("labels") or {}
    letting_in = []
    for np in kind_of(objs, "NetworkPolicy"):
        spec = np.get("spec") or {}
        target = spec.get("podSelector") or {}
        if namespace(np) != namespace(w) or (target and not selects(target, labels)) \
                or "Ingress" not in spec.get("policyTypes", ["Ingress"]):
            continue
        for rule in spec.get("ingress") or []:
            ports = rule.get("ports")
            if not ports or any(p.get("port") in (PEER_PORT_NAME, peer_port) for p in ports):
                letting_in.append((np, rule))
    check(variant, any(any(p.get("port") == PEER_PORT_NAME for p in rule.get("ports") or [])
                       for _, rule in letting_in),
          f"{where}: no NetworkPolicy selects the node plugin's pods and names their port '{PEER_PORT_NAME}' "
          "(with any policy on the pods, the other nodes' drivers could not reach it)")
    for np, rule in letting_in:
        sources = rule.get("from") or []
        check(variant, bool(sources) and all(set(src) == {"podSelector"} and selects(src["podSelector"], labels)
                                             for src in sources),
              f"NetworkPolicy/{name(np)}: lets {sources or 'anyone'} reach the peer port; only the node plugin's "
              "pods may (a podSelector of their labels, in their namespace)")


def check_rbac_nothing_more(variant, who, rules, wanted, scope):
    """Every verb on every resource granted is one a sidecar of this pod needs."""
    extra = sorted({f"{verb} {resource} ({group or 'core'})"
                    for r in rules for group in r.get("apiGroups", []) for resource in r.get("resources", [])
                    for verb in r.get("verbs", []) if verb not in wanted.get((group, resource), set())})
    check(variant, not extra, f"{who}: RBAC ({scope}) grants more than its sidecars need: {extra}")


# ---------------------------------------------------------------- examples
def check_examples(variant, objs, driver_name, class_names, snapclass_names):
    check_images(variant, objs)
    pvcs = {name(p): p for p in kind_of(objs, "PersistentVolumeClaim")}
    snaps = {name(s): s for s in kind_of(objs, "VolumeSnapshot")}
    for p in pvcs.values():
        sc = p["spec"].get("storageClassName")
        check(variant, sc in class_names, f"PVC/{name(p)}: StorageClass '{sc}' is not one of {sorted(class_names)}")
        ds = p["spec"].get("dataSource")
        if ds:
            target = snaps if ds.get("kind") == "VolumeSnapshot" else pvcs
            check(variant, ds.get("name") in target,
                  f"PVC/{name(p)}: dataSource {ds.get('kind')}/{ds.get('name')} is not among the examples")
    for s in snaps.values():
        check(variant, s["spec"].get("volumeSnapshotClassName") in snapclass_names,
              f"VolumeSnapshot/{name(s)}: class '{s['spec'].get('volumeSnapshotClassName')}' "
              f"is not one of {sorted(snapclass_names)}")
        src = s["spec"].get("source", {}).get("persistentVolumeClaimName")
        check(variant, src in pvcs, f"VolumeSnapshot/{name(s)}: source PVC '{src}' is not among the examples")
    inline = 0
    block = 0
    for w, pod in workloads(objs):
        for v in pod.get("volumes", []):
            if "persistentVolumeClaim" in v:
                claim = v["persistentVolumeClaim"]["claimName"]
                check(variant, claim in pvcs, f"Pod/{name(w)}: claim '{claim}' is not among the examples")
                if claim in pvcs and pvcs[claim]["spec"].get("volumeMode") == "Block":
                    block += 1
                    used = any(d.get("name") == v["name"]
                               for c in pod["containers"] for d in c.get("volumeDevices", []))
                    check(variant, used, f"Pod/{name(w)}: block claim '{claim}' must be used through volumeDevices")
            if "csi" in v:
                inline += 1
                attrs = v["csi"].get("volumeAttributes", {}) or {}
                check(variant, v["csi"].get("driver") == driver_name,
                      f"Pod/{name(w)}: inline volume driver '{v['csi'].get('driver')}' differs from '{driver_name}'")
                check(variant, re.fullmatch(r"[0-9]+(Ki|Mi|Gi|Ti)?", str(attrs.get("size", ""))) is not None,
                      f"Pod/{name(w)}: inline volume needs volumeAttributes.size like 1Gi")
                check(variant, attrs.get("fsType", "ext4") in FS_TYPES,
                      f"Pod/{name(w)}: inline volume fsType '{attrs.get('fsType')}' is not one of {sorted(FS_TYPES)}")
    check(variant, inline >= 1, "no example with an inline ephemeral volume")
    check(variant, block >= 1, "no example with a raw block volume")
    kinds = {("snapshot", "VolumeSnapshot"), ("restore", "VolumeSnapshot"), ("clone", "PersistentVolumeClaim")}
    have = {("snapshot", "VolumeSnapshot")} if snaps else set()
    for p in pvcs.values():
        ds = p["spec"].get("dataSource") or {}
        if ds.get("kind") == "VolumeSnapshot":
            have.add(("restore", "VolumeSnapshot"))
        if ds.get("kind") == "PersistentVolumeClaim":
            have.add(("clone", "PersistentVolumeClaim"))
    check(variant, have == kinds,
          f"examples for snapshot, restore and clone expected, missing {sorted(k for k, _ in kinds - have)}")
    vacs = kind_of(objs, "VolumeAttributesClass")
    check(variant, len(vacs) >= 1, "no example VolumeAttributesClass (ControllerModifyVolume)")
    for vac in vacs:
        check(variant, vac.get("driverName") == driver_name,
              f"VolumeAttributesClass/{name(vac)}: driverName '{vac.get('driverName')}' differs from '{driver_name}'")
        keys = set((vac.get("parameters") or {}).keys())
        check(variant, keys <= MUTABLE_PARAMETERS,
              f"VolumeAttributesClass/{name(vac)}: parameters {sorted(keys - MUTABLE_PARAMETERS)} cannot change; "
              f"the driver's mutable parameters are {sorted(MUTABLE_PARAMETERS)}")


def main(argv):
    global DEPLOY_DIR, KUSTOMIZE, VERBOSE
    if len(argv) < 3:
        print("usage: check_manifests.py DEPLOY_DIR KUSTOMIZE [-v]", file=sys.stderr)
        return 2
    DEPLOY_DIR, KUSTOMIZE = argv[1], argv[2]
    VERBOSE = "-v" in argv[3:]

    variants = ["base"]
    overlays = os.path.join(DEPLOY_DIR, "overlays")
    if os.path.isdir(overlays):
        variants += [f"overlays/{d}" for d in sorted(os.listdir(overlays))
                     if os.path.isfile(os.path.join(overlays, d, "kustomization.yaml"))]
    base_names = None
    for v in variants:
        objs, err = render(os.path.join(DEPLOY_DIR, v))
        if not check(v, objs is not None, f"kustomize build failed: {err}"):
            continue
        result = check_deployment(v, objs)
        if v == "base":
            base_names = result
    objs, err = render(os.path.join(DEPLOY_DIR, "examples"))
    if check("examples", objs is not None, f"kustomize build failed: {err}") and base_names:
        check_examples("examples", objs, *base_names)

    print(f"manifests: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
