"""Pages and API lists use a bounded number of queries whatever the size (STYLE rule 9)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from inventory.models import Cluster, Node, Pod
from posture.models import Finding, PostureRun, TenantScore
from providers.models import Answer, Assessment, Provider, ProviderContact, Questionnaire
from tenants.models import SharingRequest, Tenant, TrustClass
from tests.conftest import api_client

pytestmark = pytest.mark.django_db


def build_world(size: int, viewer) -> None:
    """`size` tenants, each with a GPU node, a pod, three findings and a score."""
    now = timezone.now()
    cluster = Cluster.objects.create(name=f"c{size}")
    internal = TrustClass.objects.get(slug="internal")
    run = PostureRun.objects.create()
    questionnaire, _ = Questionnaire.objects.get_or_create(
        slug="q", version=1, defaults={"title": "q", "spec": {}, "spec_hash": "x"}
    )
    for i in range(size):
        tenant = Tenant.objects.create(slug=f"t{size}-{i}", name=f"T {i}", trust_class=internal)
        tenant.viewers.add(viewer)
        node = Node.objects.create(cluster=cluster, name=f"n{i}", is_gpu_node=True, changed_at=now)
        Pod.objects.create(
            cluster=cluster, namespace=f"ns{i}", name="p", node=node, tenant=tenant,
            phase="Running", changed_at=now,
        )  # fmt: skip
        for j, severity in enumerate(("critical", "high", "low")):
            Finding.objects.create(
                check_id="POD-001", severity=severity, tenant=tenant, cluster=cluster,
                subject_kind="Pod", subject_namespace=f"ns{i}", subject_name=f"p{j}",
                fingerprint=f"{size}-{i}-{j}", title="t", first_seen=now, last_seen=now,
            )  # fmt: skip
        TenantScore.objects.create(
            run=run, tenant=tenant, computed_at=now, score=40, grade="F", contributions=[]
        )
        SharingRequest.objects.create(
            tenant=tenant, cluster=cluster, mode="mig_gi", justification="j", requested_by=viewer
        )
        provider = Provider.objects.create(slug=f"p{size}-{i}", name=f"P {i}")
        ProviderContact.objects.create(provider=provider, name="c")
        assessment = Assessment.objects.create(
            provider=provider, questionnaire=questionnaire, created_by=viewer,
            status="accepted", expires_at=now, score=80, red_flags=[{"question": "Q-1"}],
        )  # fmt: skip
        Answer.objects.create(assessment=assessment, question_id="Q-1", value="yes")
    cluster.provider = provider
    cluster.save()


def count_queries(fetch) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = fetch()
    assert response.status_code == 200
    return len(ctx.captured_queries)


URLS = [
    # API lists: auth (session, user, groups) + count + page (+ prefetches per list).
    ("api", "/api/v1/findings/"),
    ("api", "/api/v1/tenants/"),
    ("api", "/api/v1/nodes/"),
    ("api", "/api/v1/workloads/"),
    ("api", "/api/v1/clusters/"),
    ("api", "/api/v1/checks/"),
    ("api", "/api/v1/findings/export/?format=csv"),
    # Pages: session, user, roles + the page's own selectors.
    ("page", "/"),
    ("page", "/findings/"),
    ("page", "/nodes/"),
    ("page", "/clusters/"),
    ("page", "/checks/"),
    ("page", "/checks/frameworks/"),
    ("page", "/patch/"),
    ("page", "/bulletins/"),
    ("api", "/api/v1/bulletins/"),
    ("api", "/api/v1/sharing-requests/"),
    ("page", "/sharing-requests/"),
    ("page", "/approvals/"),
    ("api", "/api/v1/providers/"),
    ("api", "/api/v1/assessments/"),
    ("page", "/providers/"),
]


@pytest.mark.parametrize("kind, url", URLS)
@pytest.mark.parametrize("persona", ["security_lead", "viewer_alpha"])
def test_query_count_does_not_grow_with_size(personas, kind, url, persona):
    counts = []
    for size in (3, 30):
        Finding.objects.all().delete()
        TenantScore.objects.all().delete()
        Pod.objects.all().delete()
        Tenant.objects.all().delete()
        Cluster.objects.all().delete()
        Provider.objects.all().delete()
        build_world(size, personas["viewer_alpha"])
        user = User.objects.get(pk=personas[persona].pk)  # no roles cached from a previous call
        if kind == "api":
            counts.append(count_queries(lambda u=user: api_client(u).get(url)))
        else:
            client = Client()
            client.force_login(user)
            counts.append(count_queries(lambda c=client: c.get(url)))
    assert counts[0] == counts[1], f"{url}: {counts[0]} queries at 3, {counts[1]} at 30"
    assert counts[1] <= 14, counts
