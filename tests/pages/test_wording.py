"""Wording the red team read wrong (rtpages item 7): plural of GPU nodes, an expired approval
that "expired expires", a cut list with no "and N more", fractional ticks on a count."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from inventory.charts import patch_heatmap
from providers.assessments import _first
from tenants.models import SharingRequest, Tenant


def page(user, url: str) -> str:
    client = Client()
    client.force_login(user)
    return client.get(url).content.decode()


@pytest.mark.django_db
def test_cluster_page_counts_gpu_nodes_in_the_right_number(small_world, personas):
    html = page(personas["security_lead"], "/clusters/lab/")
    n = int(re.search(r"(\d+) GPU nodes? of \d+</a>", html).group(1))
    assert f"{n} GPU node{'' if n == 1 else 's'} of" in html


@pytest.mark.django_db
def test_expired_approval_is_not_said_to_expire(small_world, personas):
    alpha = Tenant.objects.get(slug="alpha")
    past = timezone.now() - timedelta(days=3)
    SharingRequest.objects.create(
        tenant=alpha,
        cluster=small_world,
        mode="mig_gi",
        justification="j",
        requested_by=personas["viewer_alpha"],
        status="approved",
        decided_by=personas["platform_engineer"],
        decided_at=past - timedelta(days=1),
        expires_at=past,
    )
    html = page(personas["security_lead"], "/tenants/alpha/")
    assert "expired</span>" in html
    assert f"data-expiry>on {past:%Y-%m-%d}</span>" in html
    assert "expires " + f"{past:%Y-%m-%d}" not in html


def test_a_cut_list_says_how_many_more():
    ids = [f"Q{i}" for i in range(34)]
    assert _first(ids) == ", ".join(ids[:10]) + " and 24 more"
    assert _first(ids[:3]) == "Q0, Q1, Q2"


def test_patch_heatmap_ticks_are_whole_node_counts():
    colorbar = patch_heatmap(["pool"], ["driver"], [[2]])["data"][0]["colorbar"]
    assert colorbar["dtick"] == 1 and colorbar["tick0"] == 0
    wide = patch_heatmap(["p"], ["c", "d"], [[0, 23]])["data"][0]
    assert wide["colorbar"]["dtick"] == 5 and wide["zmax"] == 23
