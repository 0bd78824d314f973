"""Numbers that agree: the utilisation chart and its table, the busiest GPUs (never one at 0.0
busy), a check's severity on its page and on its findings, and a CPU node without red
"unknown" GPU facts."""

from __future__ import annotations

import json
import re

import pytest
from django.utils import timezone

from inventory.models import Node
from posture.models import Finding
from posture.rules import CHECKS
from telemetry.models import GpuUsageDaily
from tenants.models import Tenant

pytestmark = pytest.mark.django_db


def _usage(
    cluster,
    tenant,
    uuid: str,
    *,
    gpu: float = 0.0,
    mig: float = 0.0,
    busy: float = 0.0,
    gi: str = "",
) -> None:
    GpuUsageDaily.objects.create(
        cluster=cluster,
        day=timezone.now().date(),
        hostname="gpu-1",
        uuid=uuid,
        tenant=tenant,
        gi_id=gi,
        gi_profile="3g.40gb" if gi else "",
        attribution="tenant",
        confidence="exact",
        gpu_hours=gpu,
        mig_slice_hours=mig,
        busy_gpu_hours=busy,
    )


def test_the_utilisation_table_adds_up_to_what_the_chart_stacks(small_world, personas, client):
    alpha, beta = Tenant.objects.get(slug="alpha"), Tenant.objects.get(slug="beta")
    # alpha only on MIG: the chart stacks its slice-hours, the table once showed 0.0 GPU-hours.
    _usage(small_world, alpha, "GPU-mig", mig=128.75, gi="1")
    _usage(small_world, beta, "GPU-whole", gpu=24.0, busy=20.0)
    client.force_login(personas["security_lead"])
    page = client.get("/utilisation/").content.decode()
    figure = json.loads(
        re.search(r'id="hours-chart" type="application/json">(.*?)</script>', page, re.S).group(1)
    )
    charted = {trace["name"]: sum(trace["y"]) for trace in figure["data"]}
    tabled = {
        tenant: float(hours)
        for tenant, hours in re.findall(r'data-tenant="([^"]+)">.*?data-hours>([\d.]+)<', page)
    }
    # The legend names tenants as every page does (their slugs stay in the table's data-tenant).
    assert charted == pytest.approx({"Team Alpha": 128.75, "Beta Corp": 24.0})
    assert tabled == pytest.approx({"alpha": 128.8, "beta": 24.0}, abs=0.05)


def test_busiest_gpus_never_lists_a_gpu_that_was_not_busy(small_world, personas, client):
    alpha, beta = Tenant.objects.get(slug="alpha"), Tenant.objects.get(slug="beta")
    _usage(small_world, alpha, "GPU-held-idle", gpu=24.0, busy=0.0)
    _usage(small_world, beta, "GPU-working", gpu=24.0, busy=20.0)
    client.force_login(personas["security_lead"])
    page = client.get("/utilisation/").content.decode()
    busiest = page[page.index("Busiest GPUs") : page.index("Idle allocated GPUs")]
    assert "GPU-working" in busiest
    assert "GPU-held-idle" not in busiest
    idle = page[page.index("Idle allocated GPUs") :]
    assert "GPU-held-idle" in idle  # it is not lost: the idle list shows it


def test_busiest_gpus_says_so_when_none_was_busy(small_world, personas, client):
    _usage(small_world, Tenant.objects.get(slug="alpha"), "GPU-held-idle", gpu=24.0)
    client.force_login(personas["security_lead"])
    page = client.get("/utilisation/").content.decode()
    assert "No GPU was busy in this period" in page


def test_a_check_page_says_why_its_findings_are_rated_otherwise(small_world, personas, client):
    check = CHECKS["STACK-002"]
    now = timezone.now()
    Finding.objects.create(
        check_id="STACK-002",
        severity="critical",
        cluster=small_world,
        subject_kind="Node",
        subject_name="gpu-1",
        fingerprint="raised",
        title="Toolkit below baseline",
        first_seen=now,
        last_seen=now,
    )
    assert check.severity == "high"
    client.force_login(personas["security_lead"])
    page = client.get("/checks/STACK-002/").content.decode()
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))
    assert "Severity per finding:" in text
    assert "worst severity the vendor bulletins give" in text
    assert "Open findings: 1 critical" in text
    listing = client.get("/checks/").content.decode()
    row = listing[listing.index('href="/checks/STACK-002/"') :]
    assert "1 rated otherwise" in row[: row.index("</tr>")]


def test_a_check_whose_findings_agree_says_nothing_more(small_world, personas, client):
    client.force_login(personas["security_lead"])
    rated = {
        c.id
        for c in CHECKS.values()
        if Finding.objects.filter(check_id=c.id, status="open").exclude(severity=c.severity)
    }
    quiet = next(c for c in sorted(CHECKS) if c not in rated and not CHECKS[c].severity_rule)
    assert "Severity per finding" not in client.get(f"/checks/{quiet}/").content.decode()


def test_a_cpu_node_shows_no_unknown_gpu_facts(small_world, personas, client):
    cpu = Node.objects.get(cluster=small_world, is_gpu_node=False)
    client.force_login(personas["security_lead"])
    page = client.get(f"/nodes/{small_world.name}/{cpu.name}/").content.decode()
    assert 'class="unknown"' not in page
    assert "A CPU node" in page
    assert "not applicable" in page
    gpu = Node.objects.filter(cluster=small_world, is_gpu_node=True).first()
    assert "A CPU node" not in client.get(f"/nodes/{small_world.name}/{gpu.name}/").content.decode()
