"""Every bulletin import is recorded (what was asked, what landed, what was refused and why);
URL imports from the page and the API run on a worker; beat polls the configured feeds."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from inventory.bulletins.imports import bulletin_import_run
from inventory.models import Bulletin, BulletinImport
from inventory.tasks import poll_bulletin_feeds
from tests.conftest import api_client
from tests.test_bulletin_feeds import provider_feed
from tests.test_fetch import LocalServer, _no_dns  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def feed(settings) -> Iterator[LocalServer]:
    with provider_feed(settings) as running:
        yield running


def test_api_url_import_is_queued_recorded_and_readable(
    feed: LocalServer, personas, django_capture_on_commit_callbacks
):
    lead = api_client(personas["security_lead"])
    with django_capture_on_commit_callbacks(execute=True):
        answer = lead.post(
            "/api/v1/bulletins/",
            {"urls": [feed.url("/csaf/provider-metadata.json")]},
            format="json",
        )
    assert answer.status_code == 202
    record = BulletinImport.objects.get(pk=answer.json()["id"])
    assert (record.trigger, record.requested_by) == ("api", "sec")
    assert record.status == "succeeded" and record.counts["imported"] == 3
    assert record.counts["refused"] == 2 and Bulletin.objects.count() == 3
    shown = lead.get(f"/api/v1/bulletin-imports/{record.pk}/").json()
    assert {r["source"].rsplit("/", 1)[1] for r in shown["refused"]} == {
        "broken.json",
        "missing.json",
    }
    # Import records may name internal mirrors: not for tenant viewers.
    viewer = api_client(personas["viewer_alpha"])
    assert viewer.get(f"/api/v1/bulletin-imports/{record.pk}/").status_code == 404
    assert viewer.get("/api/v1/bulletin-imports/").json()["results"] == []


def test_a_refused_url_import_is_recorded_as_failed(personas, django_capture_on_commit_callbacks):
    lead = api_client(personas["security_lead"])
    with django_capture_on_commit_callbacks(execute=True):
        answer = lead.post(
            "/api/v1/bulletins/", {"urls": ["https://169.254.169.254/latest"]}, format="json"
        )
    record = BulletinImport.objects.get(pk=answer.json()["id"])
    assert record.status == "failed" and "link-local" in record.refused[0]["reason"]
    assert bulletin_import_run(record=record) is None  # a finished import never runs again


def test_page_url_import_runs_and_the_list_shows_it(
    feed: LocalServer, personas, django_capture_on_commit_callbacks
):
    client = Client()
    client.force_login(personas["platform_engineer"])
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(
            "/bulletins/import/", {"urls": feed.url("/csaf/provider-metadata.json")}
        )
    assert answer.status_code == 302 and Bulletin.objects.count() == 3
    page = client.get("/bulletins/").content.decode()
    assert "Recent imports" in page and "missing.json" in page and "HTTP 404" in page
    assert "plat" in page and "(page)" in page


def test_the_command_records_its_import(tmp_path):
    (tmp_path / "x.json").write_text("{nope")
    with pytest.raises(CommandError, match="no document could be imported"):
        call_command("import_bulletins", str(tmp_path), stdout=io.StringIO(), stderr=io.StringIO())
    record = BulletinImport.objects.get()
    assert (record.trigger, record.status, record.counts["refused"]) == ("cli", "failed", 1)


def test_beat_polls_the_configured_feeds(feed: LocalServer, settings):
    assert poll_bulletin_feeds() == {"status": "skipped", "reason": "no feeds configured"}
    settings.GPUPOSTURE_BULLETIN_FEEDS = [feed.url("/csaf/provider-metadata.json")]
    outcome = poll_bulletin_feeds()
    assert outcome["status"] == "succeeded" and outcome["counts"]["imported"] == 3
    assert BulletinImport.objects.get().trigger == "schedule"
    assert poll_bulletin_feeds()["counts"]["unchanged"] == 3  # idempotent
