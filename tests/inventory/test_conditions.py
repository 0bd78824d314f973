"""Bulletin conditions judged against a node's facts, in NVIDIA's own phrasing (product names
and notes of the real bulletins), and the facts a node's objects give (pure)."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from inventory.bulletins.csaf.document import parse_advisory
from inventory.bulletins.csaf.notes import note_conditions
from inventory.conditions import NodeFacts, evaluate
from inventory.runtime import node_facts
from inventory.sources.gpu_operator import parse_cluster_policy
from tests.realworld import realworld

CDI_ON = NodeFacts(cdi=True, sources={"cdi": "ClusterPolicy cluster-policy spec.cdi.enabled"})
CDI_OFF = NodeFacts(cdi=False, sources={"cdi": "ClusterPolicy cluster-policy spec.cdi.enabled"})
UNKNOWN = NodeFacts()
TOOLKIT_5659 = "CDI mode only for versions prior to 1.17.5"
PLUGIN_5659 = "only when device-list-strategy is cdi-annotations and/or cdi-cri"
NOT_WITH_CDI = "This does not impact use cases where CDI is used."
CRUN = "CVE-2025-23266 does not affect systems where crun is used as the low-level runtime."
NONDEFAULT = (
    "This vulnerability is present only when the NVIDIA Container Toolkit is configured in a "
    "nondefault way."
)
ENVVAR_FLAG = "only if accept-nvidia-visible-devices-envvar-when-unprivileged is true"


def lists(*names: str) -> NodeFacts:
    return NodeFacts(device_list_strategies=frozenset(names))


@pytest.mark.parametrize(
    ("condition", "facts", "installed", "affected"),
    [
        # nvidia-5659 product names
        (TOOLKIT_5659, CDI_OFF, "1.17.4", False),
        (TOOLKIT_5659, CDI_ON, "1.17.4", True),
        (TOOLKIT_5659, UNKNOWN, "1.17.4", None),
        (TOOLKIT_5659, CDI_OFF, "1.17.6", True),  # outside the condition's scope: always affected
        ("CDI mode only for versions prior to 25.3.1", CDI_OFF, "24.9.2", False),
        ("only when CDI is enabled", CDI_OFF, "0.12.1", False),
        ("only when CDI is enabled", CDI_ON, "0.12.1", True),
        (PLUGIN_5659, lists("envvar"), "0.17.0", False),
        (PLUGIN_5659, lists("cdi-cri"), "0.17.0", True),
        (PLUGIN_5659, lists("envvar", "cdi-annotations"), "0.17.0", True),
        (PLUGIN_5659, CDI_OFF, "0.17.0", False),  # a CDI strategy needs CDI in the runtime
        (PLUGIN_5659, CDI_ON, "0.17.0", None),  # CDI on says nothing of the plugin's strategy
        # nvidia-5582 / 5616 notes: the inverse
        (NOT_WITH_CDI, CDI_ON, "1.16.1", False),
        (NOT_WITH_CDI, CDI_OFF, "1.16.1", True),
        (NOT_WITH_CDI, UNKNOWN, "1.16.1", None),
        # phrasing gpuposture cannot check: unverified, never not affected
        (CRUN, CDI_OFF, None, None),
        (NONDEFAULT, CDI_OFF, None, None),
        # other conditions bulletins use
        ("with MIG enabled", NodeFacts(mig=False), None, False),
        ("when MIG is enabled", NodeFacts(mig=True), None, True),
        ("on systems with vGPU", NodeFacts(vgpu=False), None, False),
        ("only when MPS is used", NodeFacts(sharing="time_slicing"), None, False),
        ("only when time-slicing is configured", NodeFacts(sharing="time_slicing"), None, True),
        ("when the device plugin uses envvar", lists("volume-mounts"), None, False),
        (ENVVAR_FLAG, NodeFacts(envvar_unprivileged=False), None, False),
        ("only when CDI is disabled", CDI_ON, None, False),
        # every clause must hold: one line that does not makes the node not affected
        (f"{PLUGIN_5659}\n{CRUN}", CDI_OFF, "0.17.0", False),
        (f"{TOOLKIT_5659}\n{CRUN}", CDI_ON, "1.17.4", None),
    ],
)
def test_conditions(condition, facts, installed, affected):
    verdict = evaluate(condition, facts, installed)
    assert verdict.affected is affected, verdict.text
    if affected is False:
        assert verdict.code == "condition_not_met"
        assert verdict.justification == "vulnerable_code_not_in_execute_path"
        assert verdict.text.startswith("Not affected:")
    if affected is None:
        assert verdict.code == "condition_unverified" and "unverified" in verdict.text


def test_reason_quotes_the_condition_and_where_the_fact_was_read():
    verdict = evaluate(TOOLKIT_5659, CDI_OFF, "1.17.4")
    assert verdict.as_reason() == {
        "code": "condition_not_met",
        "text": f'Not affected: the bulletin limits this to "{TOOLKIT_5659}", and CDI device '
        "injection is off (ClusterPolicy cluster-policy spec.cdi.enabled).",
        "justification": "vulnerable_code_not_in_execute_path",
    }


def advisory(number: str):
    return parse_advisory(json.loads(realworld("csaf", f"nvidia-{number}.json").read_text()))


def test_conditions_stated_in_real_notes():
    found = {v.cve: note_conditions(advisory("5582"), v) for v in advisory("5582").vulnerabilities}
    assert found == {"CVE-2024-0132": (NOT_WITH_CDI,), "CVE-2024-0133": (NOT_WITH_CDI,)}
    # A document note that names one CVE concerns that CVE only.
    doc = advisory("5659")
    by_cve = {v.cve: note_conditions(doc, v) for v in doc.vulnerabilities}
    assert by_cve["CVE-2025-23267"] == ()
    assert by_cve["CVE-2025-23266"] == (
        "CVE-2025-23266 does not affect systems where crun is used as the low-level runtime.",
    )
    # Prose that is not a condition (driver bulletins' summaries) gives none.
    assert all(note_conditions(advisory("5630"), v) == () for v in advisory("5630").vulnerabilities)


def policy(spec: dict) -> list[tuple[str, dict]]:
    parsed = parse_cluster_policy(
        {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "spec": spec}
    )
    return [("cluster-policy", asdict(parsed))]


def test_node_facts_from_the_cluster_policy_and_gfd_labels():
    gfd = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    spec = {"cdi": {"enabled": False}}
    facts = node_facts(gfd, policy(spec), [], "none")
    assert (facts.cdi, facts.mig, facts.vgpu, facts.sharing) == (False, False, False, "none")
    assert facts.sources["cdi"] == "ClusterPolicy cluster-policy spec.cdi.enabled"
    on = node_facts(
        gfd,
        policy(
            {
                "cdi": {"enabled": True},
                "devicePlugin": {"env": [{"name": "DEVICE_LIST_STRATEGY", "value": "cdi-cri"}]},
            }
        ),
        [],
        "mig",
    )
    assert (on.cdi, on.device_list_strategies, on.mig) == (True, frozenset({"cdi-cri"}), True)
    bare = node_facts({}, [], [], "unknown")  # nothing read: nothing claimed
    assert (bare.cdi, bare.device_list_strategies, bare.mig, bare.vgpu, bare.sharing) == (
        None,
        None,
        None,
        None,
        None,
    )


def test_the_nodes_own_device_plugin_config_gives_its_strategy():
    configs = [
        {"configmap": "plugin-config", "key": "a-default", "device_list_strategy": "envvar"},
        {"configmap": "plugin-config", "key": "cdi", "device_list_strategy": "cdi-cri"},
    ]
    labels = {"nvidia.com/device-plugin.config": "cdi"}
    assert node_facts(labels, [], configs, "none").device_list_strategies == frozenset({"cdi-cri"})
    assert node_facts({}, [], configs, "none").device_list_strategies == frozenset({"envvar"})
