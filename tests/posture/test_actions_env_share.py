"""A pod that takes GPUs through NVIDIA_VISIBLE_DEVICES=all with no GPU request raises POD-011
and SHARE-004 (it time-shares the node's GPUs without approval). Removing the variable from its
workload closes both: one action, POD-011's, not an approval to ask for."""

from __future__ import annotations

from typing import Any

from posture.actions import ActionFinding, actions_for, group_of
from posture.rules.registry import FindingDraft
from tests.posture.builders import tenant
from tests.posture.gpu_access_world import container, namespace, node, pod, run, world
from tests.posture.test_gpu_access_env import _toolkit_pod

ALPHA = tenant("alpha")
NVD_ALL = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]


def _action_finding(pk: int, draft: FindingDraft) -> ActionFinding:
    return ActionFinding(
        id=pk,
        check_id=draft.check_id,
        severity=draft.severity or "high",
        cluster="c",
        subject_kind=draft.subject_kind,
        subject_namespace=draft.subject_namespace,
        subject_name=draft.subject_name,
        title=draft.title,
        evidence=draft.evidence,
        exposure=draft.exposure,
        tenant_weights={t: 1.0 for t in draft.tenants},
    )


def _drafts(*pods: dict[str, Any]) -> list[FindingDraft]:
    inputs = world([node("gpu-a"), namespace("alpha"), _toolkit_pod(), *pods], (ALPHA,))
    return [*run("POD-011", inputs), *run("SHARE-004", inputs)]


def test_share004_made_only_through_the_variable_is_pod011s_action():
    perftest = pod("alpha", "ib-perftest", container(env=NVD_ALL))
    drafts = _drafts(perftest)
    assert sorted(d.check_id for d in drafts) == ["POD-011", "SHARE-004"]
    found = [_action_finding(i, d) for i, d in enumerate(drafts, 1)]
    (action,) = actions_for(found)
    assert action.check_ids == ("POD-011", "SHARE-004")
    assert action.title.startswith("Request GPUs through the scheduler")


def _share004(through: dict[str, Any], pod_count: int) -> ActionFinding:
    evidence = {"pod_count": pod_count, "through_visible_devices": through}
    draft = FindingDraft("SHARE-004", ("alpha",), "SharingMode", "", "time_slicing", evidence)
    return _action_finding(9, draft)


def test_share004_with_scheduled_pods_or_two_workloads_stays_its_own():
    """A use that also holds GPUs through the scheduler needs an approval whatever the
    variable; one made through two workloads takes two changes: neither is POD-011's one."""
    one = {"pod_count": 1, "workloads": ["Pod alpha/ib-perftest"], "workload_count": 1}
    assert group_of(_share004(one, 1))[0][1:3] == ("workload", "POD-011")
    assert group_of(_share004(one, 2))[0][1] == "finding"
    two = {"pod_count": 2, "workloads": ["Pod alpha/a", "Pod alpha/b"], "workload_count": 2}
    assert group_of(_share004(two, 2))[0][1] == "finding"
