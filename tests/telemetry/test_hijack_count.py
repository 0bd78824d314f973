"""ATTR-001 judged by count is one finding per node (telemetry.busy_count,
posture.rules.attr.hijack_count): where the exporter names no pod, the product knows that N of
a node's GPUs are busy beyond what its scheduled pods can occupy, never which ones. One cause,
one action, exposure the excess; the busy GPUs are candidates. Per-GPU findings earlier
versions filed for it resolve into it, their acceptance carried where all were accepted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.contrib.auth import get_user_model
from django.utils import timezone

from inventory.models import Pod
from posture.actions import ActionFinding, actions_for
from posture.finding_digests import subject_fingerprint
from posture.models import EarlierAcceptance, Finding
from posture.services import posture_evaluate
from telemetry.busy_count import counted_by_node
from telemetry.hijack import Hijack, count_moments
from telemetry.samples import GpuSample
from telemetry.services import samples_ingest
from tests.test_telemetry import UUID, make_exclusive, series

T0 = datetime(2025, 1, 1, tzinfo=UTC)
GPUS = [UUID] + [f"GPU-0000000{i}-1111-2222-3333-444444444444" for i in range(1, 8)]


def _run(uuid: str, *, counted: bool = True, node: str = "n1") -> Hijack:
    end = T0 + timedelta(minutes=20)
    return Hijack(
        (node, uuid, ""), node, uuid, "", T0, end, 95.0, 95.0, (), judged_by_count=counted
    )


def _busy(n: int, node: str = "n1") -> list[GpuSample]:
    return [
        GpuSample(time=T0 + timedelta(minutes=m), hostname=node, gpu=str(i), uuid=GPUS[i], util=95)
        for m in range(0, 21, 5)
        for i in range(n)
    ]


def test_eight_busy_against_six_held_is_one_verdict_with_an_excess_of_two():
    moments = count_moments(_busy(8), {"n1": 6}, threshold=20.0)
    runs = [_run(u) for u in GPUS]
    by_device, (counted,) = counted_by_node(runs, moments)
    assert by_device == []
    assert (counted.node, counted.busy, counted.held, counted.excess) == ("n1", 8, 6, 2)
    assert [r.uuid for r in counted.runs] == sorted(GPUS)
    assert counted.at == T0  # the earliest moment of the largest excess


def test_runs_judged_by_device_stay_one_per_gpu():
    stray = _run(GPUS[0], counted=False, node="n2")
    by_device, counted = counted_by_node(
        [stray, _run(GPUS[1])], count_moments(_busy(2), {"n1": 1}, threshold=20.0)
    )
    assert by_device == [stray]
    assert [(c.node, c.excess) for c in counted] == [("n1", 1)]


def test_the_excess_is_the_largest_while_the_runs_went_on():
    # Three busy, then four: the excess over two held grows from 1 to 2.
    later = [
        GpuSample(time=T0 + timedelta(minutes=m), hostname="n1", gpu="3", uuid=GPUS[3], util=95)
        for m in (15, 20)
    ]
    moments = count_moments(_busy(3) + later, {"n1": 2}, threshold=20.0)
    _, (counted,) = counted_by_node([_run(u) for u in GPUS[:3]], moments)
    assert (counted.busy, counted.held, counted.excess) == (4, 2, 2)
    assert counted.at == T0 + timedelta(minutes=15)


def _four_busy_two_held(small_world) -> None:
    """gpu-ts-1 with whole GPUs; its two pods hold two; the exporter names no pod; four GPUs
    busy for 25 minutes."""
    make_exclusive()
    start = timezone.now() - timedelta(minutes=25)
    samples = [s for i in range(4) for s in series(start, 25, busy=95, gpu=str(i), uuid=GPUS[i])]
    samples_ingest(cluster=small_world, samples=samples)


def test_more_busy_gpus_than_held_without_pod_labels_is_one_node_finding(small_world):
    _four_busy_two_held(small_world)
    posture_evaluate()
    (finding,) = Finding.objects.filter(check_id="ATTR-001", status="open")
    assert (finding.subject_kind, finding.subject_name, finding.key) == (
        "Node",
        "gpu-ts-1",
        "by-count",
    )
    assert finding.severity == "critical"
    assert finding.exposure == 2  # the excess, not the four busy GPUs
    evidence = finding.evidence
    assert (evidence["busy_gpus"], evidence["held_gpus"], evidence["excess"]) == (4, 2, 2)
    assert evidence["candidate_gpus"] == sorted(GPUS[:4])
    assert evidence["candidate_count"] == 4 and len(evidence["candidates"]) == 4
    assert evidence["which_gpus_unheld"].startswith("unknown")
    assert evidence["window_minutes"] == 15 and evidence["minutes"] == 25
    assert "names no pod" in evidence["held_by"]
    assert finding.title.startswith("4 GPUs busy on gpu-ts-1 while its scheduled pods can occupy 2")
    # The tenants with pods on the node, as the per-GPU finding had.
    assert set(finding.tenants.values_list("slug", flat=True)) == {"alpha", "beta"}


def test_the_node_finding_is_one_action():
    # Four GPUs' by-count runs were four actions, each "Fix ATTR-001"; the node's one finding
    # is one (the process on the node is found once).
    finding = ActionFinding(
        id=1,
        check_id="ATTR-001",
        severity="critical",
        cluster="lab",
        subject_kind="Node",
        subject_namespace="",
        subject_name="gpu-ts-1",
        title="4 GPUs busy on gpu-ts-1",
        evidence={},
        exposure=2,
        tenant_weights={"alpha": 1.0, "beta": 1.0},
    )
    (action,) = actions_for([finding])
    assert action.finding_ids == (1,) and action.tenants == ("alpha", "beta")


def _old_per_gpu_rows(cluster, *, accepted: list[bool]) -> list[Finding]:
    """Per-GPU by-count findings as earlier versions filed them, one per busy GPU."""
    lead = get_user_model().objects.get(username="sec")
    now = timezone.now()
    rows = []
    for uuid, ok in zip(GPUS, accepted, strict=False):
        key = f"ATTR-001:{uuid}:"
        rows.append(
            Finding.objects.create(
                check_id="ATTR-001",
                severity="critical",
                status="accepted" if ok else "open",
                cluster=cluster,
                subject_kind="Node",
                subject_name="gpu-ts-1",
                key=key,
                fingerprint=subject_fingerprint(
                    cluster.name, "ATTR-001", ("Node", "", "gpu-ts-1", key)
                ),
                title=f"GPU {uuid} on gpu-ts-1 busy 25 min while more of the node's GPUs were busy",
                evidence={"gpu_uuid": uuid},
                first_seen=now - timedelta(days=2),
                last_seen=now - timedelta(hours=1),
                accepted_by=lead if ok else None,
                accepted_reason="benchmark burn-in" if ok else "",
                accepted_until=now + timedelta(days=30) if ok else None,
                accepted_at=now - timedelta(days=1) if ok else None,
            )
        )
    return rows


def test_accepted_per_gpu_findings_carry_their_acceptance_to_the_node_finding(small_world):
    _four_busy_two_held(small_world)
    old = _old_per_gpu_rows(small_world, accepted=[True] * 4)
    posture_evaluate()
    assert set(
        Finding.objects.filter(pk__in=[r.pk for r in old]).values_list("status", flat=True)
    ) == {"resolved"}
    (finding,) = Finding.objects.filter(check_id="ATTR-001", key="by-count")
    assert finding.status == "accepted"
    assert "benchmark burn-in" in finding.accepted_reason
    assert finding.first_seen == min(r.first_seen for r in old)
    assert EarlierAcceptance.objects.filter(finding=finding, carried=True).count() == 4


def test_one_unaccepted_per_gpu_finding_leaves_the_node_finding_open(small_world):
    _four_busy_two_held(small_world)
    _old_per_gpu_rows(small_world, accepted=[True, True, True, False])
    posture_evaluate()
    (finding,) = Finding.objects.filter(check_id="ATTR-001", key="by-count")
    assert finding.status == "open"
    # The acceptances that no longer apply are kept with it, not lost.
    assert EarlierAcceptance.objects.filter(finding=finding, carried=False).count() == 3


def test_a_gpu_no_pod_can_occupy_stays_its_own_finding(small_world):
    # No pod holds any GPU on the node: every busy GPU is known unheld, one finding each.
    make_exclusive()
    Pod.objects.filter(node__name="gpu-ts-1").exclude(namespace="gpu-operator").delete()
    start = timezone.now() - timedelta(minutes=25)
    samples = series(start, 25, busy=95) + series(start, 25, busy=95, gpu="1", uuid=GPUS[1])
    samples_ingest(cluster=small_world, samples=samples)
    posture_evaluate()
    found = Finding.objects.filter(check_id="ATTR-001", status="open")
    assert sorted(f.evidence["gpu_uuid"] for f in found) == sorted(GPUS[:2])
    assert all(f.key.startswith("ATTR-001:GPU-") for f in found)
