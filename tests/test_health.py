"""/healthz and /readyz: open to probes, saying nothing private; readiness checks the database
and the broker."""

from __future__ import annotations

import socket

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_healthz_and_readyz_in_process(client: Client):
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ok", "database": "up", "broker": "in-process"}


def test_readyz_is_not_ready_when_the_broker_is_down(client: Client, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{closed_port()}/0"
    ready = client.get("/readyz")
    assert ready.status_code == 503
    assert ready.json() == {"status": "unavailable", "database": "up", "broker": "down"}
    # The web's probe asks only for the database: pages still serve without Redis.
    web = client.get("/readyz?require=database")
    assert web.status_code == 200 and web.json()["broker"] == "down"


def test_readyz_with_the_real_broker(client: Client, settings):
    with socket.socket() as sock:
        if sock.connect_ex(("127.0.0.1", 6379)) != 0:
            pytest.skip("no Redis on 127.0.0.1:6379")
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/0"
    assert client.get("/readyz").json()["broker"] == "up"
