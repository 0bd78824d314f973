"""A refused Prometheus URL is recorded (the `import_failed` event, the cluster page's "Refused
imports", /api/v1/audit-events/) and a failed source read noted (TelemetrySource.last_error)
without any credential it carried: not in user info, not in the query or fragment, not in a
scheme-less user:password@host, neither in `source` nor in the error text."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from gpuposture.base import fetch
from telemetry.models import TelemetrySource
from telemetry.services import TelemetryError, telemetry_source_read
from tests.inventory.test_refused_imports import cluster_page, refusals

pytestmark = pytest.mark.django_db

SECRET = "s3cretpw"


def _refused(url: str) -> None:
    with pytest.raises(CommandError) as refused:
        call_command("ingest_dcgm", "--prometheus", url, cluster="lab", stdout=io.StringIO())
    assert SECRET not in str(refused.value)


@pytest.mark.parametrize(
    ("url", "source"),
    [
        ("https://prom.example.com/?access_token=s3cretpw", "https://prom.example.com/"),
        ("https://prom.example.com/prom#id_token=s3cretpw", "https://prom.example.com/prom"),
        ("https://bob:s3cretpw@prom.example.com:9090/", "https://prom.example.com:9090/"),
        ("bob:s3cretpw@prom.example.com", "prom.example.com"),
        ("bob:s3cretpw@prom.example.com/?token=s3cretpw", "prom.example.com/"),
    ],
)
def test_a_refused_prometheus_url_is_recorded_without_its_credentials(
    small_world, personas, url, source
):
    _refused(url)
    (event,) = refusals(personas["auditor"])
    assert event["after"]["source"] == source
    assert event["after"]["error"]
    assert SECRET not in str(event)
    page = cluster_page(personas["platform_engineer"])
    assert "Refused imports" in page and SECRET not in page


def test_a_very_long_source_is_bounded(small_world, personas):
    _refused("https://prom.example.com/" + "p" * 5000)
    (event,) = refusals(personas["auditor"])
    assert len(event["after"]["source"]) <= 500


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://prom.example.com/api?x=1#y", "https://prom.example.com/api"),
        ("HTTPS://Bob:pw@Prom.Example.com:8443/a", "https://prom.example.com:8443/a"),
        ("http://[::1]:9090/?t=pw", "http://[::1]:9090/"),
        ("http://u:pw@prom:notaport/?t=pw", "prom:notaport/"),
        ("prom.example.com:9090", "prom.example.com:9090"),
        ("/var/lib/dcgm/metrics.prom", "/var/lib/dcgm/metrics.prom"),
    ],
)
def test_a_url_is_shown_as_scheme_host_port_path(url, shown):
    assert fetch.shown_url(url) == shown


def test_a_failed_source_read_notes_no_credentials(small_world):
    source = TelemetrySource.objects.create(
        cluster=small_world,
        kind=TelemetrySource.Kind.EXPORTER,
        url="https://prom.example.com/metrics?access_token=s3cretpw",
    )
    with pytest.raises(TelemetryError):
        telemetry_source_read(source=source)
    source.refresh_from_db()
    assert source.last_error and SECRET not in source.last_error
