"""The Helm chart (charts/blockpool) on the end-to-end cluster: `helm install` with the values of
the layout the flows run (ci/shared-pool-values.yaml for overlays/shared-pool) into the still empty
cluster, every object it made read back from the API server, and the release uninstalled; then,
once `kubectl apply -k` of the layout has made its objects, they must be the same.

Installed first and gone again rather than beside the layout's: the chart makes the same
cluster-wide objects (the CSIDriver, the StorageClasses, the ClusterRoles and their bindings), so a
second release would collide with them, and one renamed into another namespace would not be the
objects an operator gets. A server-side dry run would create nothing to compare."""

import json
import subprocess
import sys
from pathlib import Path

import cluster as cl

sys.path.insert(0, str(cl.REPO / "sidecars-deploy" / "test"))
sys.dont_write_bytecode = True  # no __pycache__ beside the manifest checks in the work tree
from check_chart import differences  # noqa: E402

CHART = cl.REPO / "charts" / "blockpool"
VALUES = CHART / "ci" / f"{Path(cl.SHARED_LAYOUT).name}-values.yaml"
RELEASE = "blockpool"
RELEASE_NAMESPACE = "default"  # the release's record; the chart makes the objects' namespace
# What the API server, its controllers and the two tools write on an object beside what was sent.
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")
WRITTEN_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration", "meta.helm.sh/release-name",
                       "meta.helm.sh/release-namespace", "deprecated.daemonset.template.generation",
                       "deployment.kubernetes.io/revision")


def as_sent(obj):
    """A live object without what the API server, its controllers, kubectl and helm added."""
    obj.pop("status", None)
    meta = obj.get("metadata") or {}
    for field in SERVER_FIELDS:
        meta.pop(field, None)
    annotations = meta.get("annotations") or {}
    for a in WRITTEN_ANNOTATIONS:
        annotations.pop(a, None)
    if not annotations:
        meta.pop("annotations", None)
    return obj


class Helm:
    def __init__(self, c: cl.Cluster):
        self.c = c
        self.installed = None  # the objects the release made, as the API server had them

    def helm(self, *args):
        r = subprocess.run([self.binary, "--kubeconfig", str(self.c.admin), *map(str, args)],
                           capture_output=True, text=True, check=False)
        assert r.returncode == 0, f"helm {' '.join(map(str, args))} failed: {r.stderr.strip()}"
        return r.stdout

    def live(self, manifest):
        """The objects of a manifest as the API server has them (one kubectl get for all)."""
        items = json.loads(self.c.kubectl("get", "-f", "-", "-o", "json", input=manifest))
        return [as_sent(o) for o in items.get("items", [items])]

    def install_and_uninstall(self):
        tools = subprocess.run([cl.REPO / "sanity-tests" / "install-tools.sh", "helm"], check=True,
                               capture_output=True, text=True).stdout.strip()
        self.binary = Path(tools) / "helm"
        self.helm("install", RELEASE, CHART, "-f", VALUES, "--namespace", RELEASE_NAMESPACE)
        self.installed = self.live(self.helm("get", "manifest", RELEASE, "--namespace", RELEASE_NAMESPACE))
        # --wait: until every object is gone, the namespace too, which apply -k then makes anew
        self.helm("uninstall", RELEASE, "--namespace", RELEASE_NAMESPACE, "--wait", f"--timeout={cl.RECONCILED}s")
        assert self.c.get("namespace", cl.NAMESPACE) is None, f"namespace {cl.NAMESPACE} left by helm uninstall"

    def same_as_applied(self):
        applied = self.live(self.c.kubectl("kustomize", cl.REPO / cl.SHARED_LAYOUT))
        diff = differences(applied, self.installed)
        assert not diff, f"helm install of {VALUES.name} made other objects than apply -k of {cl.SHARED_LAYOUT}:\n" \
            + "\n".join(diff)
