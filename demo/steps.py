"""The steps of `manage.py demo`, each loading one part of the demo world through the same
services a person or a sync would use; the command (demo/management/commands/demo.py) runs
them in order and prints what each did."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import OutputWrapper
from django.db import transaction
from django.utils import timezone

from demo.bulletins import BULLETINS, driver_bulletin_january, driver_bulletin_revised
from demo.cluster_parts import EXTERNAL_POOL_TAINT
from demo.clusters import CLUSTERS
from demo.history import last_week, mid_week
from demo.k8s_pack import deployed_pack
from demo.nvidia_smi import HOSTS, nvidia_smi_xml
from demo.telemetry import DemoNode, DemoPod, demo_samples, truncated_scrape, uuid_of
from demo.world import kubectl_sorted
from inventory.bulletins.imports import bulletins_import_recorded
from inventory.holding_models import GpuHolders
from inventory.hostfacts_import import node_host_facts_import
from inventory.input_failures import DCGM, import_failure_record
from inventory.models import Cluster, DriftEvent, Node, PatchSla, Pod, SyncRun
from inventory.services import cluster_save, cluster_sync_from_snapshot
from inventory.sync import SyncError, cluster_get_or_create
from posture.models import Finding, PostureRun, TenantScore
from posture.policy_packs import generated_policy_pack
from posture.rescore import rescore_now
from posture.services import finding_accept
from providers.services import provider_ensure
from telemetry.models import GpuReading, GpuUsageHourly, ResetAttestation
from telemetry.rollup import telemetry_rollup
from telemetry.services import TelemetryError, exporter_text_ingest, samples_ingest
from tenants.models import Tenant, TrustClass
from tenants.services import trust_class_image_policy_set, trust_class_pool_taints_set

WEEK = timedelta(days=7)
MID_WEEK = timedelta(days=3)
ACTOR = "manage.py demo"  # who the audit log says made the demo's changes
BULLETIN_SOURCE = "demo/bulletins.py"
# What demo/telemetry.py plants per cluster: a node that never reports (ATTR-003), a GPU busy
# with no pod (ATTR-001), GPUs handed between tenants (LEAK-001; prod-east's gets a reset).
TELEMETRY_PLAN = {
    "prod-east": {
        # pe-l40s-02 runs no DCGM exporter at all (its patch status still reads current).
        "silent": ("pe-t4-02", "pe-l40s-02"),
        "handovers": (("pe-a100-01", "research-llm"),),
    },
    "neo-west": {
        "hijacked": "nw-h200-02",
        "handovers": (("nw-h200-01", "research-llm"),),
        # Its exporter runs without the Kubernetes mapping: ATTR-002, usage attributed to
        # nobody; its busy GPUs are no more than analytics' pods hold, so no ATTR-001.
        "unlabelled": ("nw-l40s-02",),
        # A node the autoscaler added after the last sync, already busy: usage nobody is known
        # to hold (ATTR-002), not a hijack, until a sync lists the node.
        "newcomer": ("nw-h200-03", "NVIDIA H200", 8),
        # The DRA-only A100 node runs no pod, yet a GPU of it is busy under the label of
        # research's multi-node leader, which the sync has on nw-h100-02 (a StatefulSet pod
        # keeps its name wherever it runs): a stale or forged label hides no holder, ATTR-001.
        "relabelled": ("nw-a100-01", "research-llm", "llm-multinode-0"),
    },
}
CLUSTER_DESCRIPTIONS = {
    "prod-east": "On-premises training and inference cluster",
    "neo-west": "Rented GPU capacity at a GPU cloud provider",
}


def image_policy_set() -> None:
    """The demo organisation's rule (POD-007): external and sensitive tenants run images
    from the internal registry, pinned by digest."""
    for trust_class in TrustClass.objects.filter(slug__in=["external", "sensitive"]):
        trust_class_image_policy_set(
            trust_class=trust_class,
            approved_registries=["registry.example.internal"],
            require_image_digest=True,
            actor=ACTOR,
        )
    # The GPU cloud taints its external pool by its own convention (tenant-class), which
    # the platform team lists on the class, as it would in the admin.
    external = TrustClass.objects.get(slug="external")
    trust_class_pool_taints_set(
        trust_class=external, pool_taints=[EXTERNAL_POOL_TAINT], actor=ACTOR
    )


def demo_cluster(name: str) -> Cluster:
    cluster = cluster_get_or_create(name=name, actor=ACTOR)
    cluster.description = CLUSTER_DESCRIPTIONS.get(name, cluster.description)
    if name == "neo-west":
        cluster.provider = provider_ensure(
            slug="nimbus-gpu",
            name="Nimbus GPU Cloud",
            website="https://nimbus-gpu.example",
            actor=ACTOR,
        )
    return cluster_save(cluster=cluster, actor=ACTOR)


def last_week_load(out: OutputWrapper, world: dict[str, list[dict]], folder: Path) -> None:
    """Sync and score last week's state, with the January driver bulletin known then, and date
    those runs a week back (demo only)."""
    started = timezone.now()
    january = [(BULLETIN_SOURCE, driver_bulletin_january())]
    bulletins_import_recorded(trigger="demo", actor=ACTOR, documents=january, rescore=False)
    for name, objects in world.items():
        path = snapshot_write(folder, f"{name}-last-week", last_week(name, objects))
        cluster_sync_from_snapshot(cluster=demo_cluster(name), paths=[path], actor=ACTOR)
    rescore_now()
    then = timezone.now() - WEEK
    with transaction.atomic():
        SyncRun.objects.filter(started_at__gte=started).update(started_at=then, finished_at=then)
        PostureRun.objects.filter(started_at__gte=started).update(started_at=then, finished_at=then)
        TenantScore.objects.filter(computed_at__gte=started).update(computed_at=then)
        Finding.objects.filter(first_seen__gte=started).update(first_seen=then, last_seen=then)
        DriftEvent.objects.filter(detected_at__gte=started).update(detected_at=then)
        _holders_dated(started, then)
    out.write("last week: synced and scored (dated 7 days back)")


def mid_week_load(out: OutputWrapper, world: dict[str, list[dict]], folder: Path) -> None:
    """neo-west synced mid-week, while the cloud's burn-in job held nw-h200-04 between two
    customers and research-eval's profiling pod was not running (demo/history.py), and scored,
    dated three days back: the sync history LEAK-001 reads, and a finding that resolved then
    and is back now (its History: "resolved", "back")."""
    started, name = timezone.now(), "neo-west"
    path = snapshot_write(folder, f"{name}-mid-week", mid_week(name, world[name]))
    cluster = demo_cluster(name)
    cluster_sync_from_snapshot(cluster=cluster, paths=[path], actor=ACTOR)
    rescore_now(clusters=[cluster])
    then = timezone.now() - MID_WEEK
    with transaction.atomic():
        SyncRun.objects.filter(started_at__gte=started).update(started_at=then, finished_at=then)
        PostureRun.objects.filter(started_at__gte=started).update(started_at=then, finished_at=then)
        TenantScore.objects.filter(computed_at__gte=started).update(computed_at=then)
        Finding.objects.filter(first_seen__gte=started).update(first_seen=then)
        Finding.objects.filter(last_seen__gte=started).update(last_seen=then)
        Finding.objects.filter(resolved_at__gte=started).update(resolved_at=then)
        DriftEvent.objects.filter(detected_at__gte=started).update(detected_at=then)
        _holders_dated(started, then)
    out.write(
        f"mid-week: {name} synced during the burn-in on nw-h200-04 and scored (dated 3 days back)"
    )


def _holders_dated(started: datetime, then: datetime) -> None:
    """Who held each node's GPUs, as of the sync dated back (demo only)."""
    GpuHolders.objects.filter(first_seen__gte=started).update(first_seen=then)
    GpuHolders.objects.filter(last_seen__gte=started).update(last_seen=then)


def policy_packs_load(out: OutputWrapper, world: dict[str, list[dict]], folder: Path) -> None:
    """gpuposture's admission pack where the demo deploys one (demo/clusters.py
    `admission_pack`): generated for the cluster as now registered and synced, applied
    with the drifts of demo/k8s_pack.py, and read back by the next sync."""
    for spec in CLUSTERS:
        if not spec.admission_pack:
            continue
        cluster = Cluster.objects.get(name=spec.name)
        pack = generated_policy_pack(cluster, dialect=spec.admission_pack)
        if not pack:  # the enforcement app is not installed: nothing to deploy
            continue
        objects = kubectl_sorted(world[spec.name] + deployed_pack(spec.name, pack))
        path = snapshot_write(folder, spec.name, objects)
        cluster_sync_from_snapshot(cluster=cluster, paths=[path], actor=ACTOR)
        out.write(
            f"policy pack ({spec.admission_pack}) on {spec.name}: {len(pack)} objects "
            "applied in Enforce, one binding left in Audit and one policy edited by hand "
            "(DRIFT-005); synced again"
        )


def failed_sync_load(out: OutputWrapper, folder: Path) -> None:
    """A kubectl dump cut short, as happens: the run fails and nothing changes. It is
    neo-west's latest sync, so its banner says the cluster is stale and why."""
    broken = folder / "neo-west-truncated.json"
    broken.write_text('{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", ')
    # The sync module logs every failed sync as a WARNING; here the failure is the point,
    # and a warning in the middle of the demo's output reads like a broken install.
    try:
        with quiet("inventory.sync"):
            cluster_sync_from_snapshot(
                cluster=demo_cluster("neo-west"), paths=[broken], actor=ACTOR
            )
    except SyncError:
        out.write(
            "neo-west: a failed sync, on purpose (part of the demo): a truncated snapshot "
            "was refused, recorded, and changed nothing; the cluster page shows it as stale"
        )


def host_facts_load(out: OutputWrapper) -> None:
    cluster = Cluster.objects.get(name="prod-east")
    for node in HOSTS:
        node_host_facts_import(cluster=cluster, node_name=node, xml=nvidia_smi_xml(node))
    out.write(f"nvidia-smi: host facts for {len(HOSTS)} prod-east nodes")


def bulletins_load(out: OutputWrapper) -> None:
    # Recorded like any import (the demo scores right after, so no re-score here); then a
    # revision that drops a branch, held for a security lead to confirm on /bulletins/.
    bulletins_import_recorded(
        trigger="demo",
        actor=ACTOR,
        documents=[(BULLETIN_SOURCE, b()) for b in BULLETINS],
        rescore=False,
    )
    _record, revised = bulletins_import_recorded(
        trigger="demo",
        actor=ACTOR,
        documents=[(BULLETIN_SOURCE, driver_bulletin_revised())],
        rescore=False,
    )
    out.write(
        f"bulletins: {len(BULLETINS)} (demo copies); {len(revised.held)} weakening revision "
        "held for a security lead"
    )
    # The security lead tightened the critical SLA (the demo scores right after, so the
    # service's re-score is not needed here).
    PatchSla.objects.update_or_create(
        severity="critical", defaults={"days": 5, "updated_by": "security-lead"}
    )


# Last week the security lead accepted the legacy T4 node's driver exposure as the January
# bulletin left it; the April bulletin adds CVEs and a higher R535 fix, which reopens it.
REOPENED = ("STACK-001", "pe-t4-02")
REOPENED_REASON = (
    "The legacy T4 pool is retired at the end of the quarter; its January driver fixes wait "
    "for that."
)


def driver_acceptance_load(out: OutputWrapper) -> None:
    """The security lead's acceptance of last week's driver finding on the legacy T4 node
    (what the January bulletin exposed then); the next score reopens it, saying what the April
    bulletin added. Once only: a re-run leaves it as it is."""
    check, node = REOPENED
    findings = Finding.objects.filter(check_id=check, subject_name=node)
    finding = findings.filter(status=Finding.Status.OPEN).first()
    if finding is None or findings.exclude(accepted_at=None).exists():
        return
    lead = get_user_model().objects.get(username="security-lead")
    until = timezone.now() + timedelta(days=60)
    finding_accept(finding=finding, user=lead, reason=REOPENED_REASON, until=until)
    out.write(f"triage: {check} on {node} accepted as last week's bulletins left it")


def telemetry_load(out: OutputWrapper) -> None:
    """A day of GPU samples per cluster (demo/telemetry.py), rolled up by the hour, and a
    reset recorded for one of the two GPU handovers between tenants."""
    now = timezone.now()
    GpuReading.objects.all().delete()  # a re-run starts the day again
    GpuUsageHourly.objects.all().delete()
    ResetAttestation.objects.filter(recorded_by="platform-engineer").delete()
    for cluster in Cluster.objects.filter(name__in=TELEMETRY_PLAN):
        options = TELEMETRY_PLAN[cluster.name]
        samples = demo_samples(_demo_nodes(cluster), now=now, **options)
        result = samples_ingest(cluster=cluster, samples=samples)
        out.write(f"telemetry {cluster.name}: {result.samples} samples")
    telemetry_rollup(now=now)
    handover_at = now - timedelta(hours=13)
    prod = Cluster.objects.get(name="prod-east")
    ResetAttestation.objects.create(
        cluster=prod,
        node="pe-a100-01",
        gpu_uuid=uuid_of("pe-a100-01", 0),
        reset_at=handover_at,
        method=ResetAttestation.Method.GPU_RESET,
        previous_tenant=Tenant.objects.filter(slug="research").first(),
        next_tenant=Tenant.objects.filter(slug="orbital").first(),
        recorded_by="platform-engineer",
        note="Drained and reset before the new tenant.",
    )
    # A saved /metrics page cut short, refused as `ingest_dcgm FILE` refuses it and recorded
    # for prod-east's "Refused imports" panel; nothing of it is stored.
    source = "pe-l40s-01-metrics.txt"
    try:
        exporter_text_ingest(cluster=prod, text=truncated_scrape(), read_at=now)
    except TelemetryError as exc:
        import_failure_record(
            cluster_name=prod.name, what=DCGM, source=source, error=str(exc), actor=ACTOR
        )
        out.write(f"telemetry prod-east: {source} refused on purpose (part of the demo)")


@contextmanager
def quiet(logger_name: str) -> Iterator[None]:
    """Hide one logger's warnings for a step whose failure is expected."""
    logger = logging.getLogger(logger_name)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def snapshot_write(folder: Path, name: str, objects: list[dict]) -> Path:
    path = folder / f"{name}.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    return path


def _demo_nodes(cluster: Cluster) -> list[DemoNode]:
    pods: dict[int, list[DemoPod]] = {}
    rows = Pod.objects.filter(cluster=cluster, phase="Running", node__isnull=False)
    for node_id, namespace, name, resources in rows.values_list(
        "node_id", "namespace", "name", "gpu_resources"
    ):
        mig = next((r for r in resources if r.startswith("nvidia.com/mig-")), "")
        gpus = int(resources.get("nvidia.com/gpu", 0) or 0)
        if gpus or mig:
            profile = mig.removeprefix("nvidia.com/mig-")
            pods.setdefault(node_id, []).append(DemoPod(namespace, name, gpus, profile))
    return [
        DemoNode(
            n.name, n.gpu_model, n.gpu_count or 0, n.sharing_strategy, tuple(pods.get(n.pk, ()))
        )
        for n in Node.objects.filter(cluster=cluster, is_gpu_node=True).order_by("name")
    ]
