"""normalise(): validation errors, Secrets, counts, duplicates and determinism."""

from __future__ import annotations

import random
from typing import Any

import pytest

from inventory.sources.normalise import SnapshotError, normalise
from tests.inventory.normalise_helpers import (
    TIME_SLICING,
    configmap,
    controller,
    ctr,
    node,
    pod,
    with_config_volumes,
)

# --- validation, Secrets, counts, determinism --------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (["Pod"], "items[1] is a list"),
        ({"metadata": {"name": "x"}}, "items[1] has no kind"),
        ({"kind": "Node"}, "items[1] (Node) has no metadata"),
        ({"kind": "Node", "metadata": ["gpu-1"]}, "items[1] (Node) has no metadata"),
        (
            {"kind": "Namespace", "metadata": {"namespace": "x"}},
            "items[1] (Namespace) has no metadata.name",
        ),
        (
            {"kind": "Pod", "metadata": {"name": "trainer"}},
            "items[1] (Pod) has no metadata.namespace",
        ),
        (
            {"kind": "RoleBinding", "metadata": {"name": "rb", "namespace": ""}},
            "items[1] (RoleBinding) has no metadata.namespace",
        ),
    ],
)
def test_malformed_objects_raise_naming_index_and_kind(bad, message):
    good = {"kind": "Namespace", "metadata": {"name": "team-alpha"}}
    with pytest.raises(SnapshotError) as excinfo:
        normalise([good, bad])
    assert message in str(excinfo.value)
    assert isinstance(excinfo.value, ValueError)


def test_cluster_scoped_kinds_need_no_namespace():
    objects = [
        {"kind": "ClusterRole", "metadata": {"name": "view-nodes", "namespace": "stray"}},
        {
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "b"},
            "roleRef": {"kind": "ClusterRole", "name": "view-nodes"},
        },
        {"kind": "Namespace", "metadata": {"name": "team-alpha"}},
    ]
    snapshot = normalise(objects)
    assert (snapshot.roles[0].namespace, snapshot.bindings[0].namespace) == (None, None)


def test_secrets_are_counted_and_never_kept():
    secret = {
        "kind": "Secret",
        "metadata": {"name": "hf-token", "namespace": "team-alpha"},
        "data": {"token": "aGZfc2VjcmV0"},
    }
    snapshot = normalise(
        [secret, {"kind": "Secret"}, {"kind": "Namespace", "metadata": {"name": "team-alpha"}}]
    )
    assert snapshot.counts == {"Namespace": 1, "Secret": 2}
    assert snapshot.warnings == (
        "Secret objects in the snapshot were ignored: gpuposture never reads Secrets",
    )
    assert "aGZfc2VjcmV0" not in repr(snapshot) and "hf-token" not in repr(snapshot)


def test_other_kinds_are_counted_and_ignored():
    objects = [
        {"kind": kind, "metadata": {"name": "x", "namespace": "team-alpha"}}
        for kind in ("Job", "CronJob", "StatefulSet", "ReplicaSet", "Ingress", "NetworkPolicy")
    ] + [
        {
            "kind": "ClusterPolicy",
            "apiVersion": "nvidia.com/v1",
            "metadata": {"name": "cluster-policy"},
        }
    ]
    snapshot = normalise(objects)
    assert snapshot.counts == {
        k: 1
        for k in (
            "ClusterPolicy",
            "CronJob",
            "Ingress",
            "Job",
            "NetworkPolicy",
            "ReplicaSet",
            "StatefulSet",
        )
    }
    assert (snapshot.pods, snapshot.workloads) == ((), ())


def test_duplicate_objects_are_kept_once_with_a_warning():
    ns = {"kind": "Namespace", "metadata": {"name": "team-alpha"}}
    snapshot = normalise([ns, ns])
    assert len(snapshot.namespaces) == 1
    assert snapshot.counts == {"Namespace": 2}
    assert snapshot.warnings == (
        "Namespace team-alpha appears more than once in the snapshot; the first copy was kept",
    )


def _plugin_pod() -> dict[str, Any]:
    made = pod(
        "gpu-operator",
        "plugin",
        ctr("p", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"),
        node_name="gpu-a",
    )
    made["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "nvidia-device-plugin"}
    ]
    return made


def _mixed_cluster() -> list[dict[str, Any]]:
    return [
        node("gpu-b", {"nvidia.com/gpu.count": "2"}),
        node("gpu-a", {"nvidia.com/gpu.count": "4", "nvidia.com/device-plugin.config": "ts"}),
        pod("team-beta", "p2", ctr("c"), node_name="gpu-b"),
        pod("team-alpha", "p9", ctr("c"), node_name="gpu-a"),
        pod("team-alpha", "p1", ctr("c"), node_name="gpu-a"),
        _plugin_pod(),
        {"kind": "Namespace", "metadata": {"name": "team-beta"}},
        {"kind": "Namespace", "metadata": {"name": "team-alpha"}},
        configmap(
            "gpu-operator",
            "plugin-config",
            {"ts": TIME_SLICING, "none": "version: v1\nflags:\n  migStrategy: none\n"},
        ),
        configmap("gpu-operator", "mig", {"config.yaml": "version: v1\nmig-configs: {}\n"}),
        controller(
            "Deployment", "gpu-operator", "gpu-operator", "nvcr.io/nvidia/gpu-operator:v24.9.2"
        ),
        with_config_volumes(
            controller(
                "DaemonSet",
                "gpu-operator",
                "nvidia-device-plugin",
                "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
            ),
            "plugin-config",
        ),
        {"kind": "Role", "metadata": {"name": "r", "namespace": "team-beta"}},
        {"kind": "Role", "metadata": {"name": "r", "namespace": "team-alpha"}},
        {"kind": "ClusterRole", "metadata": {"name": "r"}},
        {"kind": "Secret", "metadata": {"name": "s", "namespace": "team-alpha"}},
        configmap("gpu-operator", "broken", {"c": "sharing: [\n"}),
        {"kind": "Job", "metadata": {"name": "j", "namespace": "team-alpha"}},
    ]


def test_determinism_shuffled_input_gives_an_equal_snapshot():
    expected = normalise(_mixed_cluster())
    for seed in range(5):
        shuffled = _mixed_cluster()
        random.Random(seed).shuffle(shuffled)
        assert normalise(shuffled) == expected
    assert [p.name for p in expected.pods] == ["plugin", "p1", "p9", "p2"]
    assert [n.name for n in expected.nodes] == ["gpu-a", "gpu-b"]
    assert list(expected.counts) == sorted(expected.counts)
    gpu_a = expected.nodes[0]
    assert (gpu_a.sharing_strategy, gpu_a.time_slicing_replicas) == ("time_slicing", 4)
    assert (gpu_a.device_plugin_version, gpu_a.gpu_operator_version) == ("0.17.0", "24.9.2")
