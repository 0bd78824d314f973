"""Which custom owners a live sync reads, and within what bounds (inventory/sources/kube_owners.py):
pure, with the discovery and the lists as plain functions over a dict world."""

from __future__ import annotations

from typing import Any

import pytest

from inventory.sources.base import SourceError
from inventory.sources.kube_owners import (
    MAX_KINDS,
    MAX_ROUNDS,
    owners_read,
    slim,
    unread_owner_kinds,
)
from inventory.sources.owner_links import template_ref
from tests.inventory import owner_chain_world as world


class FakeCluster:
    """Custom objects by (apiVersion, kind); `errors` maps a group/version or a kind to the
    SourceError its discovery or list raises. Records each call."""

    def __init__(self, objects: list[dict], errors: dict[str, str] | None = None) -> None:
        self.objects, self.errors = objects, errors or {}
        self.discovered: list[str] = []
        self.listed: list[str] = []

    def discover(self, group: str, version: str) -> dict[str, Any]:
        self.discovered.append(f"{group}/{version}")
        if error := self.errors.get(f"{group}/{version}"):
            raise SourceError(error, retryable=False)
        kinds = {o["kind"] for o in self.objects if o["apiVersion"] == f"{group}/{version}"}
        return {"resources": [{"name": k.lower() + "s", "kind": k} for k in sorted(kinds)]}

    def list_owner(self, api_version: str, kind: str, plural: str) -> list[dict]:
        self.listed.append(kind)
        assert plural == kind.lower() + "s"
        if error := self.errors.get(kind):
            raise SourceError(error, retryable=False)
        found = [o for o in self.objects if (o["apiVersion"], o["kind"]) == (api_version, kind)]
        return [slim(o, api_version, kind) for o in found]

    def read(self, listed: list[dict]) -> tuple[list[dict], list[str]]:
        return owners_read(listed, self.discover, self.list_owner)


def test_kserves_chain_is_read_to_the_inferenceservice_group_version_by_group_version():
    objects = world.kserve()
    builtin = [o for o in objects if o["apiVersion"] in ("v1", "apps/v1")]
    custom = [o for o in objects if o not in builtin]
    cluster = FakeCluster(custom)
    read, warnings = cluster.read(builtin)
    assert warnings == []
    assert cluster.listed == ["Revision", "Configuration", "Service", "InferenceService"]
    # Each group/version once, however many of its kinds are read.
    assert cluster.discovered == ["serving.knative.dev/v1", "serving.kserve.io/v1beta1"]
    # The Route owns only the core Service, which is on no pod's chain: never read.
    assert sorted(o["kind"] for o in read) == [
        "Configuration",
        "InferenceService",
        "Revision",
        "Service",
    ]


def test_only_what_owner_resolution_needs_is_kept():
    item = world.obj("ray.io/v1", "RayCluster", "rc", ("ray.io/v1", "RayService", "svc"))
    item["metadata"] |= {"labels": {"app": "llm"}, "annotations": {"big": "x" * 10_000}}
    item["spec"] = {"headGroupSpec": {"template": {}}}
    item["status"] = {"state": "ready"}
    kept = slim(item, "ray.io/v1", "RayCluster")
    assert set(kept) == {"apiVersion", "kind", "metadata"}
    assert set(kept["metadata"]) == {"name", "namespace", "uid", "ownerReferences", "labels"}


def test_a_rollouts_workload_ref_is_kept_and_its_template_is_not():
    """A live sync names a Rollout's pods as a snapshot does: by the Deployment its
    workloadRef names (owner_links), whose template is the one to edit."""
    item = world.obj("argoproj.io/v1alpha1", "Rollout", "embedder", None)
    ref = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "embedder"}
    item["spec"] = {"replicas": 2, "workloadRef": ref, "strategy": {"canary": {}}}
    assert slim(item, "argoproj.io/v1alpha1", "Rollout")["spec"] == {"workloadRef": ref}
    own = {"containers": [{"name": "m", "image": "x:1", "env": [{"name": "K", "value": "s"}]}]}
    item["spec"] = {"template": {"spec": own}}
    kept = slim(item, "argoproj.io/v1alpha1", "Rollout")
    assert "containers" not in str(kept) and template_ref(kept) is None  # its own: no workloadRef
    item["spec"]["workloadRef"] = ref  # both (the API refuses it): its own template runs
    assert template_ref(slim(item, "argoproj.io/v1alpha1", "Rollout")) is None


@pytest.mark.parametrize(
    ("owner", "controller", "wanted"),
    [
        (("ray.io/v1", "RayCluster", "rc"), True, [("ray.io/v1", "RayCluster")]),
        # A garbage-collection parent only: owner_links reads no such reference.
        (("ray.io/v1", "RayCluster", "rc"), False, []),
        # Listed already (the built-in kinds, the GPU Operator's ClusterPolicy).
        (("apps/v1", "ReplicaSet", "rs"), True, []),
        (("nvidia.com/v1", "ClusterPolicy", "cluster-policy"), True, []),
        # Volcano's Job is not the batch Job that was listed.
        (
            ("batch.volcano.sh/v1alpha1", "Job", "train"),
            True,
            [("batch.volcano.sh/v1alpha1", "Job")],
        ),
        # The core group is out of the custom-objects API's reach.
        (("v1", "ReplicationController", "rc"), True, []),
    ],
)
def test_which_owner_references_name_a_kind_to_read(owner, controller, wanted):
    pod = world.pod("p", owner)
    pod["metadata"]["ownerReferences"][0]["controller"] = controller
    assert unread_owner_kinds([pod], set(), first=True) == wanted


def test_objects_on_no_pods_chain_name_no_owner_to_read():
    config = world.obj("v1", "ConfigMap", "c", ("operator.example/v1", "Thing", "t"))
    assert unread_owner_kinds([config], set(), first=True) == []


def test_a_refused_or_failed_read_is_a_warning_and_not_served_is_nothing():
    objects = [
        world.obj("a.example/v1", "Alpha", "a"),
        world.obj("b.example/v1", "Beta", "b"),
        world.obj("c.example/v1", "Gamma", "c"),
    ]
    pods = [
        world.pod(f"p{i}", (o["apiVersion"], o["kind"], o["metadata"]["name"]))
        for i, o in enumerate(objects)
    ]
    errors = {
        "a.example/v1": "listing a.example/v1: HTTP 404: the server could not find it",
        "Beta": "listing owner:b.example/Beta: HTTP 403: the account may not list it",
        "c.example/v1": "listing c.example/v1: HTTP 500: etcdserver: request timed out",
    }
    read, warnings = FakeCluster(objects, errors).read(pods)
    assert read == []
    assert [w.split(" could not be read")[0] for w in warnings] == [
        "Beta (b.example/v1)",
        "Gamma (c.example/v1)",
    ]


def _layer(i: int) -> dict:
    owner = ("x.example/v1", f"Layer{i + 1}", f"l{i + 1}")
    return world.obj("x.example/v1", f"Layer{i}", f"l{i}", owner)


def test_a_chain_deeper_than_the_rounds_stops_with_a_warning():
    layers = [_layer(i) for i in range(1, MAX_ROUNDS + 3)]
    pod = world.pod("p", ("x.example/v1", "Layer1", "l1"))
    read, (warning,) = FakeCluster(layers).read([pod])
    assert [o["kind"] for o in read] == [f"Layer{i}" for i in range(1, MAX_ROUNDS + 1)]
    assert warning.startswith(f"owner chains stop at Layer{MAX_ROUNDS + 1} (x.example/v1)")


def test_more_owner_kinds_than_the_limit_stop_with_a_warning():
    objects = [world.obj("y.example/v1", f"Kind{i:02}", "k") for i in range(MAX_KINDS + 2)]
    pods = [world.pod(f"p{i}", ("y.example/v1", o["kind"], "k")) for i, o in enumerate(objects)]
    cluster = FakeCluster(objects)
    read, (warning,) = cluster.read(pods)
    assert len(read) == len(cluster.listed) == MAX_KINDS
    assert f"Kind{MAX_KINDS:02} (y.example/v1), Kind{MAX_KINDS + 1:02} (y.example/v1)" in warning
