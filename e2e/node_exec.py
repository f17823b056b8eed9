#!/usr/bin/env python3
"""kubectl-blockpool's way into a node plugin's pod on the hollow nodes, whose pods run no
containers (the plugin's KUBECTL_BLOCKPOOL_EXEC): runs the command the plugin would run in the
pod's driver container as that node's driver runs here, on this host: with the node's pool, the
CA's directory and the other nodes' peer addresses the test gave that driver, all read from the
JSON file BLOCKPOOL_E2E_NODE_EXEC names ({pod: {"driver", "pool", "peer_ca", "peers"}}).

    node_exec.py NAMESPACE POD CONTAINER blockpool-csi ARGS..."""
import json
import os
import sys
from pathlib import Path


def host_command(pods, pod, container, program, args):
    if container != "blockpool" or program != "blockpool-csi":
        raise SystemExit(f"node_exec: only the driver runs here, not {container}: {program}")
    node = pods[pod]
    args = list(args)
    for i, arg in enumerate(args[:-1]):
        if arg == "--pool-dir":
            args[i + 1] = node["pool"]
        elif arg == "--peer-ca-dir":
            args[i + 1] = node["peer_ca"]
        elif arg == "--from":
            # the pod IP of a hollow node's pod reaches nothing: the node's peer port on this host
            name = args[i + 1].split("=", 1)[0]
            args[i + 1] = f"{name}={node['peers'][name]}"
    return [node["driver"], *args]


if __name__ == "__main__":
    pods = json.loads(Path(os.environ["BLOCKPOOL_E2E_NODE_EXEC"]).read_text())
    _namespace, pod_name, container_name, command, *rest = sys.argv[1:]
    argv = host_command(pods, pod_name, container_name, command, rest)
    os.execv(argv[0], argv)
