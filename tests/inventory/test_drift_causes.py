"""One cause, one DRIFT-001: a config edit in force on several GPU nodes is one change that
names them, not one more per node; a node's own change stays its own."""

from __future__ import annotations

from inventory import snapshot as snap
from inventory.drift import ClusterState, detect_drift

NAMES = ("gpu-1", "gpu-2", "gpu-3")


def ts_node(name: str, replicas: int = 4, **changes) -> snap.Node:
    base = dict(
        name=name,
        gpu_count=1,
        gpu_model="NVIDIA-A100-SXM4-40GB",
        labels={"nvidia.com/device-plugin.config": "any"},
        sharing_strategy="time_slicing",
        time_slicing_replicas=replicas,
        device_plugin_config="any",
        device_plugin_config_used="gpu-operator/time-slicing-config:any",
    )
    return snap.Node(**{**base, **changes})


def config(key: str = "any", replicas: int = 4) -> snap.SharingConfig:
    return snap.SharingConfig(
        namespace="gpu-operator",
        configmap="time-slicing-config",
        key=key,
        mode="time_slicing",
        replicas=replicas,
    )


def state(nodes, *configs) -> ClusterState:
    return ClusterState(nodes=tuple(nodes), sharing_configs=tuple(configs))


def summary(changes):
    return [(c.check_id, c.subject_kind, c.subject_name) for c in changes]


def test_one_config_edit_on_three_nodes_is_one_change_naming_them():
    before = state([ts_node(n, 4) for n in NAMES], config(replicas=4))
    after = state([ts_node(n, 8) for n in NAMES], config(replicas=8))
    (change,) = detect_drift(before, after)
    assert (change.subject_kind, change.subject_name) == ("ConfigMap", "time-slicing-config")
    assert change.nodes == NAMES
    assert (change.before["replicas"], change.after["replicas"]) == (4, 8)


def test_a_node_relabelled_to_another_config_stays_its_own_change():
    before = state([ts_node(n, 4) for n in NAMES], config(replicas=4), config("eight", 8))
    moved = ts_node(
        "gpu-3",
        8,
        labels={"nvidia.com/device-plugin.config": "eight"},
        device_plugin_config="eight",
        device_plugin_config_used="gpu-operator/time-slicing-config:eight",
    )
    after = state([ts_node("gpu-1", 4), ts_node("gpu-2", 4), moved], config(), config("eight", 8))
    assert ("DRIFT-001", "Node", "gpu-3") in summary(detect_drift(before, after))


def test_a_node_whose_mig_layout_changed_beside_a_config_edit_stays_its_own_change():
    before = state([ts_node(n, 4) for n in NAMES], config(replicas=4))
    relaid = ts_node("gpu-2", 8, mig_config="all-1g.5gb")
    after = state([ts_node("gpu-1", 8), relaid, ts_node("gpu-3", 8)], config(replicas=8))
    assert sorted(summary(detect_drift(before, after))) == [
        ("DRIFT-001", "ConfigMap", "time-slicing-config"),
        ("DRIFT-001", "Node", "gpu-2"),
    ]


def test_a_node_saying_other_than_the_edited_config_stays_its_own_change():
    """GFD labels gpu-3 with 2 replicas while the config now says 8: not the config's doing."""
    before = state([ts_node(n, 4) for n in NAMES], config(replicas=4))
    after = state(
        [ts_node("gpu-1", 8), ts_node("gpu-2", 8), ts_node("gpu-3", 2)], config(replicas=8)
    )
    assert ("DRIFT-001", "Node", "gpu-3") in summary(detect_drift(before, after))
    assert ("DRIFT-001", "Node", "gpu-1") not in summary(detect_drift(before, after))


def test_gfd_relabelling_a_node_with_no_config_change_stays_a_node_change():
    before = state([ts_node(n, 4) for n in NAMES], config(replicas=4))
    after = state([ts_node("gpu-1", 8), ts_node("gpu-2", 4), ts_node("gpu-3", 4)], config())
    assert summary(detect_drift(before, after)) == [("DRIFT-001", "Node", "gpu-1")]


def test_a_node_reading_another_config_is_not_folded_into_the_edited_one():
    """gpu-3 reads key `other`, which did not change; its own replicas change is its own."""
    other = dict(
        labels={"nvidia.com/device-plugin.config": "other"},
        device_plugin_config="other",
        device_plugin_config_used="gpu-operator/time-slicing-config:other",
    )
    before = state(
        [ts_node("gpu-1", 4), ts_node("gpu-3", 4, **other)], config(), config("other", 4)
    )
    after = state(
        [ts_node("gpu-1", 8), ts_node("gpu-3", 8, **other)], config(replicas=8), config("other", 4)
    )
    assert sorted(summary(detect_drift(before, after))) == [
        ("DRIFT-001", "ConfigMap", "time-slicing-config"),
        ("DRIFT-001", "Node", "gpu-3"),
    ]
