#!/usr/bin/env python3
"""Reads one JSON document on stdin and prints or tests one field of it.

Usage: json_field.py [--default JSON] PATH [EXPECTED]

PATH names the field by its keys joined with dots, e.g. volume.volume_id (a
number picks an element of a list); "." is the whole document. Empty input is
the empty object {}, as grpcurl prints nothing for an empty reply.

  json_field.py PATH             prints the field as JSON; exits 1 when it is
                                 missing, unless --default gives its value
  json_field.py PATH EXPECTED    prints nothing; exits 0 when the field equals
                                 EXPECTED (a JSON value), else 1

Protobuf's JSON mapping writes 64-bit integers as strings, so an EXPECTED
number also matches a string holding that number ("67108864" equals 67108864).
Used by image/build.sh on grpcurl's replies; needs python3 only.
"""
import json
import sys

MISSING = object()


def lookup(document, path):
    """The value at the dotted PATH in DOCUMENT, or MISSING."""
    value = document
    if path == ".":
        return value
    for key in path.split("."):
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return MISSING
    return value


def equal(actual, expected):
    if isinstance(expected, int) and not isinstance(expected, bool) and isinstance(actual, str):
        try:
            actual = int(actual)
        except ValueError:
            return False
    return type(actual) is type(expected) and actual == expected


def main(argv):
    args = argv[1:]
    default = MISSING
    if args[:1] == ["--default"] and len(args) >= 2:
        default = json.loads(args[1])
        args = args[2:]
    if len(args) not in (1, 2):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    path = args[0]

    text = sys.stdin.read()
    try:
        document = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as e:
        print(f"json_field: the input is not JSON ({e})", file=sys.stderr)
        return 1
    value = lookup(document, path)
    if value is MISSING:
        value = default

    if len(args) == 2:
        return 0 if value is not MISSING and equal(value, json.loads(args[1])) else 1
    if value is MISSING:
        print(f"json_field: no field {path} in the input", file=sys.stderr)
        return 1
    print(json.dumps(value))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
