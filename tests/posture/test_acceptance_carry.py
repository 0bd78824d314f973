"""A risk acceptance survives a change of subject that widens a finding (docs/findings.md,
"When a finding's subject widens"): STACK-008 used to be one finding per node and is now one
per ClusterPolicy. The old-shaped findings are stored as the old code stored them, accepted,
then the cluster is scored with the current rules."""

from __future__ import annotations

import json
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from inventory.services import cluster_sync_from_snapshot
from inventory.sync import cluster_get_or_create
from posture.acceptance_carry import widenings_find
from posture.finding_store import findings_refresh
from posture.models import EarlierAcceptance, Finding
from posture.read_model import posture_inputs, tenant_infos
from posture.rules.stack.visible_devices import _node_finding, node_envvar_access
from posture.services import finding_accept, posture_evaluate
from tests.conftest import api_client
from tests.posture.gpu_access_world import cluster_policy, namespace, node
from tests.posture.test_gpu_access_env import _toolkit_pod
from tests.posture.test_stack008_subject import MANAGED

pytestmark = pytest.mark.django_db
NODES = ("gpu-a", "gpu-b", "gpu-c")


@pytest.fixture
def per_node(tmp_path, personas):
    """A cluster whose GPU Operator's toolkit runs on three nodes, scored once by the old
    rule: one STACK-008 finding per node (what _node_finding made for every node)."""
    objects = [namespace("alpha"), cluster_policy()]
    objects += [node(n, labels=MANAGED) for n in NODES]
    objects += [_toolkit_pod(node_name=n) for n in NODES]
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    cluster = cluster_get_or_create(name="upgraded")
    cluster_sync_from_snapshot(cluster=cluster, paths=[path])
    inputs = posture_inputs(cluster, tenant_infos())
    old = [_node_finding(inputs, n, node_envvar_access(inputs, n)) for n in inputs.snapshot.nodes]
    findings_refresh(cluster=cluster, drafts=old, now=timezone.now())
    return cluster, {f.subject_name: f for f in Finding.objects.filter(check_id="STACK-008")}


def _accept(finding, user, days, reason):
    until = timezone.now() + timedelta(days=days)
    finding_accept(finding=finding, user=user, reason=reason, until=until)
    return until


def _widened(cluster):
    wide = Finding.objects.filter(cluster=cluster, check_id="STACK-008")
    return wide.get(subject_kind="ClusterPolicy", status__in=("open", "accepted"))


def test_every_node_accepted_carries_the_acceptance_to_the_clusterpolicy_finding(
    per_node, personas
):
    cluster, old = per_node
    assert set(old) == set(NODES)
    lead = personas["security_lead"]
    expiries = [
        _accept(old[name], lead, days, f"lab nodes, no tenant pods ({name})")
        for name, days in zip(NODES, (90, 30, 60), strict=True)
    ]
    posture_evaluate()
    widened = _widened(cluster)
    # Every node it spans was accepted: the wider finding is accepted too, until the first
    # of those acceptances ends, with their reasons; the per-node findings are resolved.
    assert widened.status == "accepted"
    assert widened.accepted_until == min(expiries)
    assert widened.accepted_by == lead
    assert all(f"({name})" in widened.accepted_reason for name in NODES)
    nodes = Finding.objects.filter(check_id="STACK-008", subject_kind="Node")
    assert set(nodes.values_list("status", flat=True)) == {"resolved"}
    (event,) = AuditEvent.objects.filter(object_id=str(widened.pk), action="carry")
    assert sorted(event.after["from_findings"]) == sorted(f.pk for f in old.values())
    assert event.after["status"] == "accepted"


def test_a_partial_acceptance_opens_the_wider_finding_and_says_what_no_longer_applies(
    per_node, personas
):
    cluster, old = per_node
    lead = personas["security_lead"]
    until = _accept(old["gpu-b"], lead, 30, "burn-in node, no tenant pods yet")
    posture_evaluate()
    widened = _widened(cluster)
    # One node of three was accepted: the acceptance never stretches to the others.
    assert widened.status == "open" and widened.accepted_until is None
    (event,) = AuditEvent.objects.filter(object_id=str(widened.pk), action="lapse")
    assert event.after["from_findings"] == [old["gpu-b"].pk]
    client = api_client(lead)
    body = client.get(f"/api/v1/findings/{widened.pk}/").json()
    (earlier,) = body["earlier_acceptances"]
    assert earlier["subject"] == "Node gpu-b"
    assert earlier["accepted_by"] == lead.get_username()
    assert earlier["reason"] == "burn-in node, no tenant pods yet"
    assert earlier["until"][:10] == until.date().isoformat()
    assert (earlier["carried"], earlier["covers"], earlier["of"]) == (False, 1, 3)
    client.force_login(lead)
    page = client.get(f"/findings/{widened.pk}/").content.decode()
    assert f"accepted on Node gpu-b by {lead.get_username()} until {until:%Y-%m-%d}" in page
    assert "they cover 1 of the 3 subjects it spans, so it is open" in page
    # Accepting again is one click: the form is filled from what no longer applies.
    assert "Accepted before on Node gpu-b: burn-in node, no tenant pods yet</textarea>" in page
    assert f'value="{until:%Y-%m-%d}"' in page
    # The node's own finding, resolved, says where its acceptance went.
    node_page = client.get(f"/findings/{old['gpu-b'].pk}/").content.decode()
    assert (
        f'it is now part of <a href="/findings/{widened.pk}/">finding #{widened.pk}</a>'
        in node_page
    )
    went = "no longer applies (the acceptances of its narrower findings cover 1 of the 3 subjects"
    assert went in node_page
    # The next score changes nothing: the acceptance is said once, not at every score.
    posture_evaluate()
    assert AuditEvent.objects.filter(object_id=str(widened.pk), action="lapse").count() == 1
    assert widened.earlier_acceptances.count() == 1


def test_an_expired_acceptance_is_not_carried(per_node, personas):
    cluster, old = per_node
    lead = personas["security_lead"]
    for name in NODES:
        _accept(old[name], lead, 30, "lab nodes, no tenant pods")
    Finding.objects.filter(pk=old["gpu-c"].pk).update(
        accepted_until=timezone.now() - timedelta(minutes=1)
    )
    posture_evaluate()
    assert _widened(cluster).status == "open"


def test_only_a_full_cover_of_resolving_acceptances_carries():
    """widenings_find on the rows the store read: a subject the wide finding covers with no
    accepted finding before (a node added since), or whose finding is still reported, is not
    covered; with nothing accepted under it there is nothing to carry or to say."""
    now = timezone.now()
    later = now + timedelta(days=9)

    def row(pk, status="accepted", until=later):
        return SimpleNamespace(pk=pk, status=status, accepted_until=until)

    existing = {"a": row(1), "b": row(2), "c": row(3, status="open", until=None), "d": row(4)}
    seen = {"wide": None, "d": None}  # "d" is still reported this time: it does not resolve
    found = widenings_find(
        [("wide", [["a"], ["b"]]), ("wider", [["a"], ["b"], ["new"]]), ("other", [["c"], ["d"]])],
        existing,
        seen,
        now,
    )
    assert [(w.fingerprint, w.sources, w.of, w.full) for w in found] == [
        ("wide", (1, 2), 2, True),
        ("wider", (1, 2), 3, False),
    ]


def test_a_pods_subject_is_whichever_owner_of_its_chain_had_a_finding():
    """A pod's covered subject is every owner below the wide one (pod, ReplicaSet,
    Deployment, Revision): one accepted finding on any of them spans it; the pods of a
    revision that had none (first seen now) count on their own, so nothing is carried."""
    now = timezone.now()
    later = now + timedelta(days=9)

    def row(pk, status="accepted"):
        return SimpleNamespace(pk=pk, status=status, accepted_until=later)

    existing = {"rev1": row(1), "rev-open": row(2, status="open")}
    one = [["pod-a", "rs1", "dep1", "rev1", "ksvc"], ["pod-b", "rs1", "dep1", "rev1", "ksvc"]]
    new = [["pod-c", "rs2", "dep2", "rev2", "ksvc"], ["pod-d", "rs2", "dep2", "rev2", "ksvc"]]
    mixed = [["pod-e", "rs3", "rev1"], ["pod-f", "rs4", "rev-open"]]
    found = widenings_find(
        [("isvc", one), ("rollout", [*one, *new]), ("mixed", mixed)], existing, {}, now
    )
    assert [(w.fingerprint, w.sources, w.of, w.full) for w in found] == [
        ("isvc", (1,), 1, True),
        ("rollout", (1,), 2, False),  # rev1's finding and the new revision's pods
        ("mixed", (1,), 2, False),  # a finding under it still open
    ]


def earlier_acceptance(finding, accepted_by, reason: str) -> EarlierAcceptance:
    """An acceptance of a narrower finding (a pool, one of two) that no longer applies to
    `finding`, as the carry records it."""
    return EarlierAcceptance.objects.create(
        finding=finding,
        subject="Pool alpha-beta",
        accepted_by=accepted_by,
        reason=reason,
        until=timezone.now() + timedelta(days=5),
        covers=1,
        of=2,
        recorded_at=timezone.now(),
    )


def test_a_tenant_viewer_reads_earlier_acceptances_without_other_tenants(small_world, personas):
    """The earlier acceptances of a finding shared by alpha and beta, as alpha's viewer reads
    them: the subject and reason name no other tenant."""
    finding = Finding.objects.get(cluster=small_world, check_id="SHARE-001")
    earlier_acceptance(finding, personas["security_lead"], "beta agreed to share until the move")
    body = api_client(personas["viewer_alpha"]).get(f"/api/v1/findings/{finding.pk}/").json()
    (earlier,) = body["earlier_acceptances"]
    assert "beta" not in earlier["reason"] and earlier["covers"] == 1
    lead = api_client(personas["security_lead"]).get(f"/api/v1/findings/{finding.pk}/").json()
    assert lead["earlier_acceptances"][0]["reason"].startswith("beta agreed")
