"""The RBAC evaluation's cost: K8S-003 asks each grant about each resource once, not once per
node, with the same findings (a rule limited to one node's name still reaches that node)."""

from __future__ import annotations

from dataclasses import replace

import posture.rules.k8s.rbac_eval as rbac_eval
from posture.rules.registry import run_checks
from tests.posture.builders import gpu_node
from tests.posture.test_rules_rbac import DEVS, cluster_role, crb, rule, world

NODES = tuple(gpu_node(f"gpu-{i:03}") for i in range(300))


def _k8s003(monkeypatch, *rules):
    asked = []
    allows = rbac_eval.rule_allows

    def counting(*args, **kwargs):
        asked.append(args)
        return allows(*args, **kwargs)

    monkeypatch.setattr(rbac_eval, "rule_allows", counting)
    # Grants that reach no node (configmap edits everywhere), and the rules asked about.
    reader = cluster_role("cm-edit", rule(resources=("configmaps",), verbs=("patch",)))
    bindings = [crb(f"cm-{i}", "cm-edit", DEVS) for i in range(3)]
    inputs = world([reader, cluster_role("r", *rules)], [*bindings, crb("b", "r", DEVS)])
    inputs = replace(inputs, snapshot=replace(inputs.snapshot, nodes=NODES))
    found = run_checks(inputs, only=["K8S-003"])
    return found, len(asked)


def test_a_grant_that_reaches_no_node_is_asked_once_per_resource_not_per_node(monkeypatch):
    found, asked = _k8s003(monkeypatch, rule(resources=("nodes",), verbs=("get",)))
    assert found == []
    # Per grant: 2 resources (nodes, nodes/status) x 2 verbs, not 600 targets (a node and its
    # status each) x 2 verbs; the rest is the escalation paths' own questions.
    assert asked < 400


def test_a_rule_limited_to_one_node_still_reaches_it(monkeypatch):
    (draft,) = _k8s003(monkeypatch, rule(verbs=("patch",), names=("gpu-123",)))[0]
    assert [o["object"] for o in draft.evidence["objects"]] == ["Node gpu-123"]
    assert draft.subject_name == "b"
