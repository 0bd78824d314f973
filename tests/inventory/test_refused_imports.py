"""Input a command refuses (malformed DCGM-Exporter text, a Prometheus that cannot be read,
malformed nvidia-smi XML) exits non-zero, stores nothing of it, keeps the last good data, and
is recorded where a person sees it later: an `import_failed` audit event on the cluster, which
the API's audit log answers and the cluster's page lists (as a failed sync's SyncRun is)."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from inventory.models import Cluster, Node
from telemetry.models import GpuReading
from telemetry.services import exporter_text_ingest
from tests.conftest import api_client
from tests.telemetry.test_ingest_rescore import exporter_text

pytestmark = pytest.mark.django_db


def refusals(user) -> list[dict]:
    response = api_client(user).get("/api/v1/audit-events/", {"action": "import_failed"})
    assert response.status_code == 200
    return response.json()["results"]


def cluster_page(user, name: str = "lab") -> str:
    client = Client()
    client.force_login(user)
    return client.get(f"/clusters/{name}/").content.decode()


def test_malformed_dcgm_text_is_refused_and_recorded(small_world, personas, tmp_path):
    exporter_text_ingest(cluster=small_world, text=exporter_text(5), read_at=timezone.now())
    bad = tmp_path / "broken.prom"
    bad.write_text("this is { not prometheus\n")
    with pytest.raises(CommandError):
        call_command("ingest_dcgm", str(bad), cluster="lab", stdout=io.StringIO())
    assert GpuReading.objects.count() == 1  # the samples from before stay
    (event,) = refusals(personas["security_lead"])
    assert event["object_type"] == "inventory.cluster"
    assert event["object_id"] == str(small_world.pk)
    assert event["actor"] == "manage.py ingest_dcgm"
    assert event["after"]["input"] == "DCGM-Exporter metrics"
    assert event["after"]["source"] == str(bad)
    assert event["after"]["error"].startswith("not DCGM-Exporter text")
    page = cluster_page(personas["platform_engineer"])
    assert "Refused imports" in page and "broken.prom" in page and "not DCGM-Exporter text" in page


def test_an_unreadable_prometheus_is_recorded_without_its_credentials(small_world, personas):
    with pytest.raises(CommandError):
        call_command(
            "ingest_dcgm",
            "--prometheus",
            "http://reader:s3cret-pass@127.0.0.1:9/",
            cluster="lab",
            stdout=io.StringIO(),
        )
    (event,) = refusals(personas["auditor"])
    assert event["after"]["source"] == "http://127.0.0.1:9/"
    assert event["after"]["error"]
    assert "s3cret-pass" not in str(event)


def test_malformed_nvidia_smi_xml_is_refused_and_recorded(small_world, personas, tmp_path):
    driver = Node.objects.get(cluster=small_world, name="gpu-ts-1").driver_version
    bad = tmp_path / "gpu-ts-1.xml"
    bad.write_text("<nvidia_smi_log><driver_version>535")
    with pytest.raises(CommandError):
        call_command("import_nvidia_smi", "--cluster", "lab", str(bad), stdout=io.StringIO())
    assert Node.objects.get(cluster=small_world, name="gpu-ts-1").driver_version == driver
    (event,) = refusals(personas["security_lead"])
    assert (event["object_id"], event["actor"]) == (
        str(small_world.pk),
        "manage.py import_nvidia_smi",
    )
    assert event["after"]["input"] == "nvidia-smi XML"
    assert event["after"]["node"] == "gpu-ts-1"
    assert "(node gpu-ts-1)" in cluster_page(personas["security_lead"])


def test_a_refused_import_for_a_new_cluster_names_it_and_creates_nothing(personas, tmp_path):
    bad = tmp_path / "bm-1.xml"
    bad.write_text("<nvidia_smi_log><driver_version>535")
    with pytest.raises(CommandError):
        call_command("import_nvidia_smi", "--cluster", "bare-metal", str(bad))
    assert not Cluster.objects.filter(name="bare-metal").exists()
    (event,) = refusals(personas["security_lead"])
    assert (event["object_type"], event["object_id"], event["object_repr"]) == (
        "inventory.cluster",
        "",
        "bare-metal",
    )


def test_a_tenant_viewer_does_not_see_the_refusals(small_world, personas, tmp_path):
    bad = tmp_path / "broken.prom"
    bad.write_text("this is { not prometheus\n")
    with pytest.raises(CommandError):
        call_command("ingest_dcgm", str(bad), cluster="lab", stdout=io.StringIO())
    assert "Refused imports" not in cluster_page(personas["viewer_alpha"])
