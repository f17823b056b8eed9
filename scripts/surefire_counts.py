#!/usr/bin/env python3
"""Sums the Surefire reports of a Maven build: prints "PASSED FAILED SKIPPED".

Reads every MODULE/target/surefire-reports/TEST-*.xml under REPO (default: the
current directory). A test that failed or raised an error counts as failed; the
rest of a suite's tests, less the skipped ones, as passed. With no reports it
prints "0 0 0". Used by scripts/test.sh; needs python3 only.

Usage: surefire_counts.py [REPO]
"""
import glob
import os
import sys
import xml.etree.ElementTree as ET


def counts(repo):
    passed = failed = skipped = 0
    for path in glob.glob(os.path.join(glob.escape(repo), "*/target/surefire-reports/TEST-*.xml")):
        suite = ET.parse(path).getroot()
        tests = int(suite.get("tests"))
        fail = int(suite.get("failures")) + int(suite.get("errors"))
        skip = int(suite.get("skipped"))
        passed += tests - fail - skip
        failed += fail
        skipped += skip
    return passed, failed, skipped


def main(argv):
    if len(argv) > 2:
        print("usage: surefire_counts.py [REPO]", file=sys.stderr)
        return 2
    print(*counts(argv[1] if len(argv) == 2 else "."))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
