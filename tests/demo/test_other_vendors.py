"""The demo shows this round's capabilities: prod-east's AMD MI300X node in CPX partitioning and
its Intel Flex node shared four ways, each with two tenants' pods, and a refused DCGM import on
the cluster page. Needs the database: the demo is built through the real paths (once: the
checks share one test)."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from posture.models import Finding

pytestmark = pytest.mark.django_db


def test_the_demo_judges_amd_partitions_intel_sharing_and_shows_a_refused_dcgm_import():
    call_command("demo", stdout=io.StringIO())
    open_ = Finding.objects.filter(status="open", cluster__name="prod-east")

    # Research and analytics each hold a CPX partition of the MI300X node: which GPU each is on
    # is not visible, so they may share one (LeftoverLocals), by a mode neither class allows.
    (leak,) = open_.filter(check_id="LEAK-002", subject_name="pe-mi300x-01")
    assert "analytics, research may share partitions" in leak.title
    assert leak.evidence["co_residence"].startswith("possible")
    assert leak.evidence["affected_by"]["model"] == "AMD_Instinct_MI300X_OAM"
    (mig_ci,) = open_.filter(check_id="SHARE-003", subject_name="research-amd")
    assert "amd.com/gpu by mig_ci" in mig_ci.title
    # The partitions are compute instances of one GPU: SHARE-002's cause, for both.
    (partitions,) = open_.filter(check_id="SHARE-002", subject_name="research-amd")
    assert sorted(partitions.tenants.values_list("slug", flat=True)) == ["analytics", "research"]
    assert "compute partitions (amd.com/gpu) of AMD GPUs" in partitions.title

    # The Flex node's one card as four i915: research's and analytics' render pods share it.
    (flex,) = open_.filter(check_id="SHARE-001", subject_name="media-flex")
    assert flex.evidence["co_residence"] == "certain"
    assert "time-slice gpu.intel.com/i915" in flex.title
    # Both vendors' operators are the platform's: no finding on their namespaces' workloads.
    # (K8S-004 may name AMD's DeviceConfig there as what a tenant principal could edit.)
    vendors = ("kube-amd-gpu", "inteldeviceplugins-system")
    assert not Finding.objects.filter(status="open", subject_namespace__in=vendors).exists()
    assert (
        not Finding.objects.filter(
            status="open", title__regex=r"kube-amd-gpu|inteldeviceplugins-system"
        )
        .exclude(check_id="K8S-004")
        .exists()
    )

    # prod-east's page lists the truncated exporter page it refused, and why.
    client = Client()
    client.force_login(User.objects.get(username="admin"))
    html = client.get("/clusters/prod-east/").content.decode()
    panel = html[html.index("Refused imports") :]
    assert "DCGM-Exporter metrics" in panel
    assert "pe-l40s-01-metrics.txt" in panel
    assert "not DCGM-Exporter text: line 3" in panel
