"""A generic ephemeral volume bound to a hostPath PV, and a pod absent mid-week.

Pure: run with `pytest -p no:django tests/demo`.
"""

from __future__ import annotations

from typing import Any

from demo import world
from demo.history import mid_week


def test_a_tokenizers_ephemeral_claim_is_bound_to_a_hostpath_pv() -> None:
    items = world.build_clusters()["prod-east"]
    (pod,) = [
        o
        for o in items
        if o["kind"] == "Pod" and o["metadata"]["name"].startswith("shard-tokenize-")
    ]
    (volume,) = pod["spec"]["volumes"]
    template = volume["ephemeral"]["volumeClaimTemplate"]
    assert template["spec"]["storageClassName"] == "manual"
    # Kubernetes names the claim `<pod>-<volume>` and makes the pod its owner.
    claim = _named(items, "PersistentVolumeClaim", f"{pod['metadata']['name']}-{volume['name']}")
    (owner,) = claim["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == (
        "Pod",
        pod["metadata"]["name"],
        pod["metadata"]["uid"],
    )
    pv = _named(items, "PersistentVolume", claim["spec"]["volumeName"])
    assert pv["spec"]["hostPath"]["path"] == "/var/lib"
    assert pv["spec"]["claimRef"]["name"] == claim["metadata"]["name"]
    (job_owner,) = pod["metadata"]["ownerReferences"]
    assert _named(items, "Job", job_owner["name"])["metadata"]["uid"] == job_owner["uid"]


def test_the_profiling_pod_was_not_running_mid_week() -> None:
    now = world.build_clusters()["neo-west"]
    names = {(o["metadata"].get("namespace"), o["metadata"]["name"]) for o in now}
    assert ("research-eval", "dcgm-prof-eval") in names
    then = {
        (o["metadata"].get("namespace"), o["metadata"]["name"]) for o in mid_week("neo-west", now)
    }
    assert ("research-eval", "dcgm-prof-eval") not in then


def _named(items: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [o for o in items if o["kind"] == kind and o["metadata"]["name"] == name]
    return found
