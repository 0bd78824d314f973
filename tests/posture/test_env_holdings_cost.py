"""The cost of finding holds through NVIDIA_VISIBLE_DEVICES: the ConfigMaps containers' env
reads are indexed once per evaluation, and each GPU node's accesses are worked out once per
score, though telemetry is handed them before the checks run (posture_inputs)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

import posture.rules.env_holdings as env_holdings
from posture.rules.common import gpu_holdings
from posture.rules.pod.visible_devices import env_configmaps_by_name
from posture.services import posture_evaluate
from telemetry.evidence import TelemetryFacts
from tests.posture.gpu_access_world import configmap
from tests.posture.test_env_holdings import cluster, env_pod, toolkit


def test_the_configmaps_env_reads_are_indexed_once_per_evaluation():
    holder = env_pod(value="")
    probe = holder["spec"]["containers"][0]
    probe["env"] = [
        {
            "name": "NVIDIA_VISIBLE_DEVICES",
            "valueFrom": {"configMapKeyRef": {"name": "gpus", "key": "visible"}},
        }
    ]
    inputs = cluster(toolkit(), holder, configmap("alpha", "gpus", {"visible": "all"}))
    (holding,) = gpu_holdings(inputs, inputs.snapshot.nodes[0])
    assert holding.every_device and holding.tenant.slug == "alpha"  # read from the ConfigMap
    assert env_configmaps_by_name(inputs) is env_configmaps_by_name(inputs)
    # A new snapshot is new inputs: nothing derived from the old one is kept.
    fresh = replace(inputs, snapshot=replace(inputs.snapshot, env_configmaps=()))
    assert env_configmaps_by_name(fresh) == {}


def test_telemetry_and_policy_packs_keep_what_was_derived_and_nothing_else_may():
    inputs = cluster(toolkit(), env_pod())
    node = inputs.snapshot.nodes[0]
    accesses = env_holdings.env_accesses(inputs, node)
    later = inputs.with_facts(telemetry=TelemetryFacts(), policy_packs={})
    assert later.memo is inputs.memo and later.namespace_owner is inputs.namespace_owner
    assert env_holdings.env_accesses(later, node) == accesses
    with pytest.raises(ValueError):
        inputs.with_facts(snapshot=inputs.snapshot)


@pytest.mark.django_db
def test_a_score_works_out_each_gpu_nodes_env_accesses_once(small_world, monkeypatch):
    asked = Counter()
    accesses = env_holdings._accesses

    def counting(inputs, node):
        asked[node.name] += 1
        return accesses(inputs, node)

    monkeypatch.setattr(env_holdings, "_accesses", counting)
    posture_evaluate()
    assert asked and set(asked.values()) == {1}, asked  # not again for the checks
