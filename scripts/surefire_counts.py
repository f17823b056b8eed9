#!/usr/bin/env python3
"""Sums the Surefire reports of a Maven build: prints "PASSED FAILED SKIPPED".

Reads every MODULE/target/surefire-reports/TEST-*.xml under REPO (default: the
current directory). A test that failed or raised an error counts as failed; the
rest of a suite's tests, less the skipped ones, as passed. With no reports it
prints "0 0 0". With --failures it prints instead one line per failed test:
"Class.method: the first line of its message". Used by scripts/test.sh; needs
python3 only.

Usage: surefire_counts.py [--failures] [REPO]
"""
import glob
import os
import sys
import xml.etree.ElementTree as ET


def suites(repo):
    for path in sorted(glob.glob(os.path.join(glob.escape(repo), "*/target/surefire-reports/TEST-*.xml"))):
        yield ET.parse(path).getroot()


def counts(repo):
    passed = failed = skipped = 0
    for suite in suites(repo):
        tests = int(suite.get("tests"))
        fail = int(suite.get("failures")) + int(suite.get("errors"))
        skip = int(suite.get("skipped"))
        passed += tests - fail - skip
        failed += fail
        skipped += skip
    return passed, failed, skipped


def failures(repo):
    for suite in suites(repo):
        for case in suite.iter("testcase"):
            for problem in [*case.iter("failure"), *case.iter("error")]:
                message = (problem.get("message") or problem.get("type") or "").strip().splitlines()
                yield f"{case.get('classname')}.{case.get('name')}: {message[0][:300] if message else ''}"


def main(argv):
    args = argv[1:]
    listing = args[:1] == ["--failures"]
    if listing:
        args = args[1:]
    if len(args) > 1:
        print("usage: surefire_counts.py [--failures] [REPO]", file=sys.stderr)
        return 2
    repo = args[0] if args else "."
    if listing:
        for line in failures(repo):
            print(line)
    else:
        print(*counts(repo))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
