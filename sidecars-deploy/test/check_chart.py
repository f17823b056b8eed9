#!/usr/bin/env python3
"""The checks of check-chart.sh, which finds helm and kustomize and runs this.

The Helm chart (charts/blockpool) is written by hand beside the kustomize layouts of
sidecars-deploy/, which stay the source of truth. This keeps the two equal:

* `helm lint --strict` of the chart with its defaults and with each values file of its ci/;
* every overlay of sidecars-deploy/overlays has a values file ci/<overlay>-values.yaml, and
  `helm template` with it renders the same objects as `kustomize build` of the overlay (the
  defaults, those of the base), compared as parsed objects (comparable() says what is left out);
* every render of the chart, those of the overlays and those of the values that no overlay has
  (ci/metrics-off-values.yaml), passes the rules of check_manifests.py that the overlays pass.

Usage: check_chart.py CHART_DIR DEPLOY_DIR HELM KUSTOMIZE [-v]
Prints one line per failed check (with -v, per passed check too) and ends with
`chart: N passed, M failed`; exits 1 when a check failed.
"""
import copy
import difflib
import json
import os
import subprocess
import sys

import yaml

sys.dont_write_bytecode = True  # no __pycache__ beside the checks in the work tree
import check_manifests as rules  # noqa: E402

# The labels the chart adds to every object's metadata that the kustomize layouts have no use for:
# Helm's own (app.kubernetes.io/managed-by and instance, helm.sh/chart). Never on pod templates.
HELM_LABELS = ("app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "helm.sh/chart")
# Lists that Kubernetes merges by their items' keys (a container's env, ports and volumeMounts, a
# pod's volumes, a policy's or Service's ports), whose order kustomize's patches change: a patched
# item moves first. No env var of the driver's pods refers to another, so none depends on the order.
KEYED_LISTS = ("env", "ports", "volumeMounts", "volumes")
# Kinds without a namespace. kustomize does not know the VolumeSnapshotClass CRD's scope and gives
# it the layout's namespace, which the API server then ignores; the chart gives it none.
CLUSTER_SCOPED = {"Namespace", "CSIDriver", "StorageClass", "ClusterRole", "ClusterRoleBinding",
                  "VolumeSnapshotClass"}
# The release name of the renders: only Helm's labels (left out of the comparison) show it.
RELEASE = "blockpool"


def comparable(obj):
    """The object as the comparison sees it: without Helm's labels, without a namespace on a
    cluster-scoped kind, with the keyed lists in a fixed order."""
    obj = copy.deepcopy(obj)
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    for label in HELM_LABELS:
        labels.pop(label, None)
    if obj.get("kind") in CLUSTER_SCOPED:
        meta.pop("namespace", None)
    return sort_keyed_lists(obj)


def sort_keyed_lists(value, key=None):
    if isinstance(value, dict):
        return {k: sort_keyed_lists(v, k) for k, v in value.items()}
    if isinstance(value, list):
        items = [sort_keyed_lists(v) for v in value]
        if key in KEYED_LISTS:
            items.sort(key=lambda v: json.dumps(v, sort_keys=True))
        return items
    return value


def identity(obj):
    meta = obj.get("metadata") or {}
    ns = "" if obj.get("kind") in CLUSTER_SCOPED else meta.get("namespace", "")
    return f"{obj.get('kind')}/{ns + '/' if ns else ''}{meta.get('name')}"


def differences(expected, actual):
    """What differs between two lists of objects, one line or a short diff per object."""
    want = {identity(o): comparable(o) for o in expected}
    have = {identity(o): comparable(o) for o in actual}
    out = [f"missing: {k}" for k in sorted(want.keys() - have.keys())]
    out += [f"not in the layout: {k}" for k in sorted(have.keys() - want.keys())]
    for k in sorted(want.keys() & have.keys()):
        if want[k] != have[k]:
            diff = difflib.unified_diff(yaml.safe_dump(want[k]).splitlines(), yaml.safe_dump(have[k]).splitlines(),
                                        "kustomize", "helm", n=1, lineterm="")
            out.append(f"differs: {k}\n    " + "\n    ".join(list(diff)[2:40]))
    return out


def run(argv):
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr.strip()


def parse(text):
    return [d for d in yaml.safe_load_all(text) if d]


def main(argv):
    if len(argv) < 5:
        print("usage: check_chart.py CHART_DIR DEPLOY_DIR HELM KUSTOMIZE [-v]", file=sys.stderr)
        return 2
    chart, deploy_dir, helm, kustomize = argv[1:5]
    rules.VERBOSE = "-v" in argv[5:]
    ci = os.path.join(chart, "ci")
    values = {f[:-len("-values.yaml")]: os.path.join(ci, f) for f in sorted(os.listdir(ci))
              if f.endswith("-values.yaml")}
    overlays = sorted(d for d in os.listdir(os.path.join(deploy_dir, "overlays"))
                      if os.path.isfile(os.path.join(deploy_dir, "overlays", d, "kustomization.yaml")))

    code, out, err = run([helm, "lint", "--strict", chart])
    rules.check("helm", code == 0, f"helm lint --strict {chart} failed:\n{out}{err}")
    for path in values.values():
        code, out, err = run([helm, "lint", "--strict", chart, "-f", path])
        rules.check("helm", code == 0, f"helm lint --strict -f {path} failed:\n{out}{err}")
    for overlay in overlays:
        rules.check("helm", overlay in values, f"overlays/{overlay} has no values file {ci}/{overlay}-values.yaml "
                    "(the chart must install what each overlay does)")

    for name in ["base", *values]:
        layout = "base" if name == "base" else f"overlays/{name}"
        variant = rules.CHART_VARIANT_PREFIX + (layout if name == "base" or name in overlays else f"ci/{name}")
        code, out, err = run([helm, "template", RELEASE, chart, *(["-f", values[name]] if name in values else [])])
        if not rules.check(variant, code == 0, f"helm template failed: {err}"):
            continue
        objs = parse(out)
        rules.check_deployment(variant, objs)
        if name != "base" and name not in overlays:
            continue
        code, out, err = run([kustomize, "build", os.path.join(deploy_dir, layout)])
        if not rules.check(variant, code == 0, f"kustomize build {layout} failed: {err}"):
            continue
        diff = differences(parse(out), objs)
        rules.check(variant, not diff, f"renders other objects than `kustomize build {layout}`:\n  "
                    + "\n  ".join(diff))

    print(f"chart: {rules.passed} passed, {rules.failed} failed")
    return 1 if rules.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
