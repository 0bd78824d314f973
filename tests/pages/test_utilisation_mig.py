"""A tenant on MIG alone has no busy figure: DCGM-Exporter gives no DCGM_FI_DEV_GPU_UTIL for
a MIG instance, so the page, the API and the chargeback say "unknown (MIG)" / null / an empty
cell, never 0.0; and pages name tenants by name (red-team rtpages item 3)."""

from __future__ import annotations

import csv
import io

import pytest
from django.test import Client
from django.utils import timezone

from telemetry.models import GpuUsageDaily
from telemetry.usage import ChargebackRow, UsageRow, chargeback
from tenants.models import Tenant
from tests.conftest import api_client

pytestmark = pytest.mark.django_db


def _use(cluster, slug: str, **hours: float) -> None:
    GpuUsageDaily.objects.create(
        cluster=cluster,
        day=timezone.now().date(),
        hostname="n1",
        uuid=f"GPU-{slug}",
        gi_id="1" if hours.get("mig_slice_hours") else "",
        tenant=Tenant.objects.get(slug=slug),
        attribution="tenant",
        confidence="exact",
        **hours,
    )


@pytest.fixture
def mig_and_whole(small_world):
    _use(small_world, "alpha", mig_slice_hours=30.0)  # MIG only: busy unknown
    _use(small_world, "beta", gpu_hours=10.0, busy_gpu_hours=4.0)
    return small_world


def test_page_says_busy_is_unknown_for_mig_and_names_tenants(mig_and_whole, personas):
    client = Client()
    client.force_login(personas["security_lead"])
    html = client.get("/utilisation/?days=7").content.decode()
    alpha = Tenant.objects.get(slug="alpha")
    row = html.split('data-tenant="alpha"')[1].split("</tr>")[0]
    assert "unknown (MIG)" in row and "0.0</td><td><span" not in row
    assert f"<td>{alpha.name}</td>" in row
    beta_row = html.split('data-tenant="beta"')[1].split("</tr>")[0]
    assert "4.0" in beta_row


def test_api_and_csv_give_no_busy_figure_for_mig(mig_and_whole, personas):
    data = api_client(personas["security_lead"]).get("/api/v1/utilisation/?days=7").json()
    alpha = [r for r in data["chargeback"] if r["tenant"] == "alpha"]
    assert alpha and alpha[0]["busy_gpu_hours"] is None
    assert [r["busy_gpu_hours"] for r in data["tenant_days"] if r["tenant"] == "alpha"] == [None]
    client = Client()
    client.force_login(personas["security_lead"])
    body = client.get("/utilisation/chargeback.csv?days=7").content.decode()
    rows = {r["tenant"]: r for r in csv.DictReader(io.StringIO(body))}
    assert rows["alpha"]["busy_gpu_hours"] == ""
    assert rows["beta"]["busy_gpu_hours"] == "4.0"


def test_pure_usage_rows_keep_busy_unknown_for_mig_alone():
    from datetime import date

    day = date(2026, 12, 1)
    rows = [
        UsageRow(day, "alpha", 0.0, 12.0, None, "exact"),
        UsageRow(day, "beta", 2.0, 0.0, 1.0, "exact"),
    ]
    assert chargeback(rows) == [
        ChargebackRow("alpha", 0.0, 12.0, None, 1),
        ChargebackRow("beta", 2.0, 0.0, 1.0, 1),
    ]
