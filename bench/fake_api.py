"""A Kubernetes API on 127.0.0.1 for the bench's live runs, in its own process (so its copy
of the cluster does not count in the bench's memory): tests/kubeapi.py's FakeKubeAPI serving a
snapshot file, with list pages, continue tokens and watches as the real API server has them.

    python bench/fake_api.py --world snapshot.json --next changed.json --kubeconfig DIR

Prints "ready" once serving (the kubeconfig is written to DIR/kubeconfig); on SIGUSR1 it
switches to the next world (a new resourceVersion, so watches see the difference) and prints
"switched". Watches are held open as long as the client asks (timeoutSeconds), like a real
server, so the bench's watch re-sync pays that wait too.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.kubeapi import FakeKubeAPI  # noqa: E402

SERVED_KINDS = {
    "Node",
    "Namespace",
    "Pod",
    "ResourceQuota",
    "ConfigMap",
    "Service",
    "DaemonSet",
    "Deployment",
    "ReplicaSet",
    "Job",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
    "Ingress",
    "NetworkPolicy",
    "ClusterPolicy",
}


def served(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [o for o in json.load(f)["items"] if o.get("kind") in SERVED_KINDS]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--world", type=Path, required=True)
    parser.add_argument("--next", type=Path, required=True)
    parser.add_argument("--kubeconfig", type=Path, required=True, help="directory to write it")
    args = parser.parse_args()
    api = FakeKubeAPI(served(args.world))
    api.watch_hold_seconds = 3600.0  # hold each watch for its full timeoutSeconds
    switch = threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: switch.set())
    with api:
        api.kubeconfig(args.kubeconfig)
        print("ready", flush=True)
        switch.wait()
        since = api.resource_version
        api.replace_objects(served(args.next))
        api.prepare_watches(since)
        print("switched", flush=True)
        threading.Event().wait()  # until the bench terminates us


if __name__ == "__main__":
    main()
