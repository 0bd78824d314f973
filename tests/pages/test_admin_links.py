"""The admin carries the site's icon (no /favicon.ico 404) and the superuser's menu links to
it (red-team rtpages item 8)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client() -> Client:
    user = get_user_model().objects.create_superuser("root", "root@example.com", "x-long-pass-1")
    client = Client()
    client.force_login(user)
    return client


def test_admin_pages_declare_the_favicon(admin_client):
    html = admin_client.get("/admin/").content.decode()
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in html


def test_superuser_menu_links_to_the_admin(admin_client):
    html = admin_client.get("/home/").content.decode()
    assert '<a href="/admin/">Admin</a>' in html


def test_no_admin_link_for_a_role_without_it(personas):
    client = Client()
    client.force_login(personas["security_lead"])
    assert '<a href="/admin/">Admin</a>' not in client.get("/home/").content.decode()
