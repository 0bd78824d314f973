"""The preview endpoint and the page read a fixed number of queries however many pods the
cluster runs (STYLE rule 9): pinned at two sizes."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from inventory.models import Pod
from tests.conftest import api_client

pytestmark = pytest.mark.django_db

# roles + posture_inputs' reads (the snapshot by kind, tenants, approvals, exemptions,
# telemetry, the handovers syncs recorded, patch records, the kinds the last full sync did
# not read) + the trust classes + the stored
# pack (lock, latest, previous, insert when it changed) + the cluster; the pack is stored on
# the first call only.
PREVIEW_PIN = 26
PAGE_PIN = 29  # + session, user and the cluster chooser


def more_pods(cluster, n: int) -> None:
    now, start = timezone.now(), Pod.objects.filter(name__startswith="extra-").count()
    Pod.objects.bulk_create(
        Pod(
            cluster=cluster,
            namespace="team-alpha",
            name=f"extra-{i}",
            phase="Running",
            changed_at=now,
            data={
                "namespace": "team-alpha",
                "name": f"extra-{i}",
                "phase": "Running",
                "host_pid": True,
            },
        )
        for i in range(start, start + n)
    )


def count(get) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = get()
    assert response.status_code == 200
    return len(ctx.captured_queries)


def test_preview_and_page_queries_do_not_grow_with_pods(small_world, personas):
    lead = personas["security_lead"]
    client = Client()
    client.force_login(lead)
    counts, total = [], 0
    for extra in (3, 30):
        more_pods(small_world, extra)
        total += extra
        rows = api_client(lead).get("/api/v1/clusters/lab/policy-pack/preview/").json()
        # Each extra pod is a bare pod running with hostPID: a workload of its own, denied.
        denied = {r["name"] for r in rows if r["rule"] == "no-host-namespaces"}
        assert {f"extra-{i}" for i in range(total)} <= denied
        counts.append(
            (
                count(lambda: api_client(lead).get("/api/v1/clusters/lab/policy-pack/preview/")),
                count(lambda: client.get("/enforcement/?cluster=lab")),
            )
        )
    (small, large) = counts
    assert small == large, counts
    assert small[0] <= PREVIEW_PIN and small[1] <= PAGE_PIN, counts
