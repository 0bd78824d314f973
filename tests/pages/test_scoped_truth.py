"""Pages never state something false to a role that sees only part of the data: an empty
scoped list says it holds only what the user may see, and a role that reads no score is told
nothing about scores (red-team rtpages item 1)."""

from __future__ import annotations

import pytest
from django.test import Client

from tenants.models import SharingRequest, Tenant

pytestmark = pytest.mark.django_db


def page(user, url: str) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def test_approvals_queue_empty_for_a_viewer_does_not_claim_everything_was_decided(
    small_world, personas
):
    SharingRequest.objects.create(
        tenant=Tenant.objects.get(slug="beta"),
        cluster=small_world,
        mode="mig_gi",
        justification="training",
        requested_by=personas["viewer_beta"],
    )
    html = page(personas["viewer_alpha"], "/approvals/")
    assert "every sharing request has been decided" not in html
    assert "No pending request is shown to you." in html
    assert "tenant viewer sees what their own tenants run" in html


def test_approvals_queue_empty_for_a_reader_of_everything_says_nothing_waits(small_world, personas):
    html = page(personas["security_lead"], "/approvals/")
    assert "Nothing waiting: every sharing request has been decided." in html


def test_procurement_is_not_told_a_scored_fleet_is_unscored(small_world, personas):
    html = page(personas["procurement"], "/")
    assert "Not scored yet" not in html
    assert "Last scored" not in html


def test_a_reader_of_scores_still_sees_when_they_were_made(small_world, personas):
    assert "Last scored" in page(personas["security_lead"], "/")


def test_provider_page_links_clusters_only_for_roles_that_can_open_them(small_world, personas):
    from providers.models import Provider

    provider = Provider.objects.create(slug="nimbus", name="Nimbus")
    small_world.provider = provider
    small_world.save(update_fields=["provider"])
    link = '<a href="/clusters/lab/">lab</a>'
    procurement = page(personas["procurement"], "/providers/nimbus/")
    assert "lab" in procurement and link not in procurement
    assert link in page(personas["security_lead"], "/providers/nimbus/")


def test_approvals_rows_name_the_tenant(small_world, personas):
    SharingRequest.objects.create(
        tenant=Tenant.objects.get(slug="beta"),
        cluster=small_world,
        mode="mig_gi",
        justification="training",
        requested_by=personas["viewer_beta"],
    )
    html = page(personas["security_lead"], "/approvals/")
    assert '<a href="/tenants/beta/">Beta Corp</a>' in html
