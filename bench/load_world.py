"""A large world for the load bench, built fast with bulk inserts (not through the sync):
200 tenants with a namespace each, one cluster of 2,000 GPU nodes (bench/telemetry_world.py's
fleet), two tenant pods and a GPU Operator pod per node, 20,000 findings with evidence shaped
as the checks write it (three in four open), five posture runs of scores with contributions,
a finished sync run, and a security lead `bench-lead`.

    DATABASE_URL=postgres://... SECRET_KEY=bench .venv/bin/python bench/load_world.py \
        [--tenants 200] [--nodes 2000] [--findings 20000]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_auth import django_setup  # noqa: E402

RUNS = 5
BATCH = 2000


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tenants", type=int, default=200)
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--findings", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=7)
    return parser.parse_args()


def build(*, tenants: int, nodes: int, findings: int, seed: int) -> dict[str, int]:
    from django.db import transaction

    from bench.telemetry_world import GPUS_PER_NODE, Fleet, setup_world

    fleet = Fleet(gpus=nodes * GPUS_PER_NODE, tenants=tenants, seed=seed)
    rng = random.Random(seed)
    with transaction.atomic():
        cluster, _user = setup_world(fleet)
        counts = {"tenants": tenants, "nodes": fleet.nodes}
        counts["pods"] = _pods(cluster, rng)
        _node_facts(cluster, rng)
        counts["findings"] = _findings(cluster, findings, rng)
        counts["scores"] = _scores(rng)
        _sync_run(cluster, counts)
    _analyze()
    return counts


def _node_facts(cluster: Any, rng: random.Random) -> None:
    """Versions, taints and patch status as a synced fleet has them."""
    from inventory.models import Node

    drivers = ("535.183.01", "550.127.05", "550.144.03", "570.86.15")
    nodes = list(Node.objects.filter(cluster=cluster))
    for node in nodes:
        node.driver_version = rng.choice(drivers)
        node.container_toolkit_version = rng.choice(("1.16.2", "1.17.4"))
        node.device_plugin_version = "0.17.0"
        node.gpu_operator_version = "24.9.2"
        node.patch_status = rng.choice(("current", "below_baseline", "unknown"))
        node.taints = [{"key": "gpuposture.io/class", "value": "internal", "effect": "NoSchedule"}]
        node.labels = {
            "nvidia.com/gpu.product": node.gpu_model.replace(" ", "-"),
            "gpuposture.io/pool": f"pool-{int(node.name[4:]) // 20:03d}",
        }
    Node.objects.bulk_update(
        nodes,
        [
            "driver_version",
            "container_toolkit_version",
            "device_plugin_version",
            "gpu_operator_version",
            "patch_status",
            "taints",
            "labels",
        ],
        batch_size=BATCH,
    )


def _pods(cluster: Any, rng: random.Random) -> int:
    from django.utils import timezone

    from inventory.models import Node, Pod
    from tenants.models import Tenant

    now = timezone.now()
    tenants = list(Tenant.objects.order_by("slug"))
    pods = []
    for i, node in enumerate(Node.objects.filter(cluster=cluster).order_by("name")):
        pods.append(
            Pod(
                cluster=cluster,
                namespace="gpu-operator",
                name=f"nvidia-dcgm-{i:05d}",
                # What a sync stores of a pod (its snapshot dict): pages read it back.
                data={"namespace": "gpu-operator", "name": f"nvidia-dcgm-{i:05d}"},
                node=node,
                phase="Running",
                service_account="nvidia-dcgm-exporter",
                changed_at=now,
            )
        )
        for k in range(2):
            tenant = tenants[(i + k * 97) % len(tenants)]
            name = f"train-{i:05d}-{k}-{rng.randrange(16**5):05x}"
            pods.append(
                Pod(
                    cluster=cluster,
                    namespace=tenant.slug,
                    tenant=tenant,
                    node=node,
                    name=name,
                    data={"namespace": tenant.slug, "name": name},
                    phase="Running",
                    service_account="default",
                    gpu_resources={"nvidia.com/gpu": rng.choice((1, 2, 4, 8))},
                    changed_at=now,
                )
            )
    Pod.objects.bulk_create(pods, batch_size=BATCH)
    return len(pods)


def _evidence(check: Any, tenant: Any, node: str, pod: str) -> tuple[str, str, str, dict]:
    """(subject kind, namespace, name, evidence) in the shape the check family writes."""
    family = check.id.split("-")[0]
    if family == "POD":
        return (
            "Pod",
            tenant.slug,
            pod,
            {
                "pod": f"{tenant.slug}/{pod}",
                "node": node,
                "phase": "Running",
                "owner": f"ReplicaSet/{pod[:-6]}",
                "tenant": tenant.slug,
                "trust_class": "internal",
                "container": "main",
                "image": f"registry.example.internal/{tenant.slug}/train@sha256:"
                + hashlib.sha256(pod.encode()).hexdigest(),
                "init_container": False,
                "field": "spec.containers[0].securityContext.privileged",
                "value": True,
            },
        )
    if family in ("SHARE", "LEAK", "ATTR"):
        return (
            "Node",
            "",
            node,
            {
                "node": node,
                "resource": "nvidia.com/gpu",
                "sharing": "time_slicing",
                "replicas": 4,
                "tenants": [tenant.slug, "t-000"],
                "trust_classes": {tenant.slug: "internal"},
                "pods": [f"{tenant.slug}/{pod}", f"t-000/train-{node}"],
                "config": {"configmap": "gpu-operator/time-slicing-config", "key": "ts-4"},
            },
        )
    if family == "STACK":
        return (
            "Node",
            "",
            node,
            {
                "node": node,
                "component": "driver",
                "version": "550.127.05",
                "baseline": "550.144.03",
                "bulletins": ["NVIDIA-2025-5614", "NVIDIA-2025-5630"],
                "cves": ["CVE-2025-23266", "CVE-2025-23267"],
                "fixed_in": "550.144.03",
            },
        )
    return (
        "Namespace",
        tenant.slug,
        tenant.slug,
        {
            "namespace": tenant.slug,
            "tenant": tenant.slug,
            "trust_class": "internal",
            "quota": None,
            "gpu_pods": 4,
            "network_policies": [],
        },
    )


def _findings(cluster: Any, total: int, rng: random.Random) -> int:
    from django.utils import timezone

    from posture.models import Finding, FindingTenant
    from posture.rules import CHECKS
    from tenants.models import Tenant

    now = timezone.now()
    checks = sorted(CHECKS.values(), key=lambda c: c.id)
    tenants = list(Tenant.objects.order_by("slug"))
    rows, affects = [], []
    for i in range(total):
        check = checks[i % len(checks)]
        tenant = tenants[rng.randrange(len(tenants))]
        node = f"gpu-{rng.randrange(10_000):04d}"
        pod = f"train-{i:05d}-{rng.randrange(16**5):05x}"
        kind, namespace, name, evidence = _evidence(check, tenant, node, pod)
        roll = rng.random()
        status = "open" if roll < 0.75 else "resolved" if roll < 0.9 else "accepted"
        seen = now - timedelta(hours=rng.randrange(24 * 30))
        rows.append(
            Finding(
                check_id=check.id,
                severity=check.severity,
                status=status,
                cluster=cluster,
                subject_kind=kind,
                subject_namespace=namespace,
                subject_name=name,
                fingerprint=hashlib.sha256(f"bench/{i}".encode()).hexdigest(),
                title=f"{check.title}: {namespace or node}/{name}"[:300],
                evidence=evidence,
                first_seen=seen,
                last_seen=now if status == "open" else seen,
                resolved_at=seen if status == "resolved" else None,
                accepted_reason="Compensating control: dedicated pool."
                if status == "accepted"
                else "",
                accepted_until=now + timedelta(days=30) if status == "accepted" else None,
            )
        )
        affects.append(None if check.scope == "cluster" else tenant)
    Finding.objects.bulk_create(rows, batch_size=BATCH)
    links = [
        FindingTenant(finding_id=row.pk, tenant=tenant)
        for row, tenant in zip(rows, affects, strict=True)
        if tenant is not None
    ]
    FindingTenant.objects.bulk_create(links, batch_size=BATCH)
    return total


def _scores(rng: random.Random) -> int:
    from django.utils import timezone

    from posture.models import FindingTenant, PostureRun, TenantScore
    from posture.scoring import SEVERITY_WEIGHTS, grade_for, score_for, shown_score
    from tenants.models import Tenant

    now = timezone.now()
    open_rows: dict[int, list[tuple[int, str, str]]] = {}
    for pk, tenant_id, check_id, severity in FindingTenant.objects.filter(
        finding__status="open"
    ).values_list("finding_id", "tenant_id", "finding__check_id", "finding__severity"):
        open_rows.setdefault(tenant_id, []).append((pk, check_id, severity))
    scores = []
    for r in range(RUNS):
        run = PostureRun.objects.create(counts={"tenants_scored": 0})
        computed = now - timedelta(days=RUNS - 1 - r)
        for tenant in Tenant.objects.all():
            found = open_rows.get(tenant.pk, [])
            contributions = [
                {
                    "finding_id": pk,
                    "check": check,
                    "severity": sev,
                    "exposure": 1,
                    "points": float(SEVERITY_WEIGHTS[sev]),
                    "reason": f"open {sev}",
                }
                for pk, check, sev in found[:20]
            ]
            # Real-looking history: the risk drifts a little run to run.
            risk = round(sum(c["points"] for c in contributions) + rng.randrange(5), 2)
            for c in contributions:
                c["share"] = round(100 * c["points"] / risk, 1)
            score = shown_score(score_for(risk))
            by_severity: dict[str, int] = {}
            for _pk, _check, sev in found:
                by_severity[sev] = by_severity.get(sev, 0) + 1
            scores.append(
                TenantScore(
                    run=run,
                    tenant=tenant,
                    computed_at=computed,
                    risk=risk,
                    score=score,
                    grade=grade_for(score),
                    contributions=contributions,
                    open_by_severity=by_severity,
                )
            )
    TenantScore.objects.bulk_create(scores, batch_size=BATCH)
    return len(scores)


def _sync_run(cluster: Any, counts: dict[str, int]) -> None:
    from django.utils import timezone

    from inventory.models import SyncRun

    SyncRun.objects.create(
        cluster=cluster,
        source="bench/load_world.py",
        status="succeeded",
        finished_at=timezone.now(),
        trigger="cli",
        counts={"Node": counts["nodes"], "Pod": counts["pods"]},
    )


def _analyze() -> None:
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:  # as autovacuum would, soon after such a load
            cursor.execute("VACUUM ANALYZE")


def main() -> None:
    args = parse_args()
    django_setup()
    started = time.monotonic()
    counts = build(tenants=args.tenants, nodes=args.nodes, findings=args.findings, seed=args.seed)
    shown = ", ".join(f"{v:,} {k}" for k, v in counts.items())
    print(f"load world: {shown} in {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
