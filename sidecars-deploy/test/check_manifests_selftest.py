#!/usr/bin/env python3
"""The self-test of check-manifests.sh, which check-manifests-selftest.sh runs.

Shows that every rule of check-manifests.sh can fail: for each case in
selftest_cases.py it copies DEPLOY_DIR (sidecars-deploy/) to a scratch directory,
breaks one thing, runs the copy's check-manifests.sh and expects it to exit 1
with the expected complaint. The untouched copy must pass first. Nothing in
DEPLOY_DIR is modified.

Usage: check_manifests_selftest.py DEPLOY_DIR
Ends with `selftest: N passed, M failed`; exits 1 when a case did not behave.
Needs python3 only (check-manifests.sh needs PyYAML and kustomize: the copy's finds no
install-tools.sh, so check-manifests-selftest.sh names the repository's in KUSTOMIZE).
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ beside the cases in the work tree
from selftest_cases import CASES  # noqa: E402


def run(tree):
    check = os.path.join(tree, "test", "check-manifests.sh")
    return subprocess.run(["bash", check], capture_output=True, text=True, check=False)


def fresh_copy(deploy_dir, scratch):
    tree = os.path.join(scratch, "tree")
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(deploy_dir, tree)
    return tree


def selftest(deploy_dir, scratch):
    passed = failed = 0

    tree = fresh_copy(deploy_dir, scratch)
    proc = run(tree)
    if proc.returncode == 0 and proc.stdout.rstrip().endswith(" 0 failed"):
        passed += 1
    else:
        failed += 1
        print(f"FAIL the untouched manifests do not pass:\n{proc.stdout}{proc.stderr}")

    for i, (path, old, new, expect) in enumerate(CASES, 1):
        tree = fresh_copy(deploy_dir, scratch)
        target = os.path.join(tree, path)
        with open(target) as f:
            text = f.read()
        if old == "@@APPEND":
            text = text + new
        elif old not in text:
            failed += 1
            print(f"FAIL case {i}: '{old[:60]}' not found in {path}; the case is out of date")
            continue
        else:
            text = text.replace(old, new, 1)
        with open(target, "w") as f:
            f.write(text)
        proc = run(tree)
        out = proc.stdout + proc.stderr
        last = proc.stdout.rstrip().splitlines()[-1] if proc.stdout.strip() else ""
        if proc.returncode == 1 and expect in out and last.startswith("manifests: ") and not last.endswith(" 0 failed"):
            passed += 1
        else:
            failed += 1
            print(f"FAIL case {i} ({path}: {old[:50]!r} -> {new[:50]!r}): expected exit 1 mentioning {expect!r}, "
                  f"got exit {proc.returncode}:\n{out}")

    print(f"selftest: {passed} passed, {failed} failed")
    return 1 if failed else 0


def main(argv):
    if len(argv) != 2:
        print("usage: check_manifests_selftest.py DEPLOY_DIR", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as scratch:
        return selftest(argv[1], scratch)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
