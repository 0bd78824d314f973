"""A platform engineer decides a sharing request seeing its context: the nodes it covers, the
other tenants on them with their classes and the policy's verdict, the open findings there and
the tenant's earlier requests, in a fixed number of queries; a tenant owner sees none of it. The
request form offers every mode and says which an approval would cover for the tenant's own pods
only."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from inventory.models import Node, Pod
from posture.models import Finding
from sharing.services import sharing_request_create, sharing_request_deny
from tenants.models import SharingRequest, Tenant
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


def ask(world, user, mode: str, tenant: str = "alpha", pool: str = "") -> SharingRequest:
    return sharing_request_create(
        tenant=Tenant.objects.get(slug=tenant),
        cluster=world,
        mode=mode,
        node_pool=pool,
        justification="Inference replicas fit in one slice each.",
        user=user,
    )


def _text(response) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode())))


def test_the_decision_page_shows_nodes_neighbours_findings_and_earlier_requests(
    small_world, personas, client
):
    earlier = ask(small_world, personas["viewer_alpha"], "mig_gi")
    sharing_request_deny(request=earlier, user=personas["platform_engineer"], reason="not yet")
    item = ask(small_world, personas["viewer_alpha"], "vgpu_fixed")
    gpu_nodes = list(Node.objects.filter(cluster=small_world, is_gpu_node=True))
    assert gpu_nodes
    open_there = Finding.objects.filter(cluster=small_world, status="open").filter(
        subject_kind="Node", subject_name__in=[n.name for n in gpu_nodes]
    )
    assert open_there.exists()
    client.force_login(make_user("plat2", "platform_engineer"))
    page = _text(client.get(f"/sharing-requests/{item.pk}/"))
    assert "Before deciding: what this would cover" in page
    for node in gpu_nodes:
        assert node.name in page
    # beta (external) runs on the same node; its class does not allow vGPU: said, in red.
    neighbours = page[page.index("Other tenants on these nodes") :]
    refused = r"Beta Corp external .* forbidden trust class 'external' allows only"
    assert re.search(refused, neighbours)
    finding = open_there.order_by("check_id").first()
    assert finding.check_id in page
    history = page[page.index("Earlier requests of alpha") :]
    assert f"#{earlier.pk}" in history and "not yet" in history
    assert f"#{item.pk} " not in history  # the request itself is not its own history


def test_a_tenant_owner_sees_their_request_but_not_who_else_is_on_the_nodes(
    small_world, personas, client
):
    item = ask(small_world, personas["viewer_alpha"], "vgpu_fixed")
    client.force_login(personas["viewer_alpha"])
    response = client.get(f"/sharing-requests/{item.pk}/")
    assert response.status_code == 200
    assert "Before deciding" not in response.content.decode()
    assert "Beta Corp" not in _text(response)


def _grow(world, extra: int) -> None:
    """`extra` more GPU nodes, each with a pod of beta and of alpha, and earlier requests."""
    now = timezone.now()
    beta, alpha = Tenant.objects.get(slug="beta"), Tenant.objects.get(slug="alpha")
    for index in range(extra):
        node = Node.objects.create(
            cluster=world,
            name=f"gpu-extra-{index}",
            is_gpu_node=True,
            gpu_model="NVIDIA H100",
            gpu_count=8,
            changed_at=now,
        )
        for tenant in (beta, alpha):
            Pod.objects.create(
                cluster=world,
                namespace=tenant.slug,
                name=f"p-{index}",
                node=node,
                tenant=tenant,
                phase="Running",
                changed_at=now,
            )
        Finding.objects.create(
            check_id="SHARE-001",
            severity="high",
            cluster=world,
            subject_kind="Node",
            subject_name=node.name,
            fingerprint=f"extra-{index}",
            title="Shared GPU",
            first_seen=now,
            last_seen=now,
        )
        SharingRequest.objects.create(
            tenant=alpha,
            cluster=world,
            mode="mig_gi",
            justification="older ask",
            status="denied",
            requested_by=make_user(f"asker-{index}"),
        )


@pytest.mark.parametrize("extra", [0, 20])
def test_the_decision_page_makes_the_same_number_of_queries_at_any_size(
    small_world, personas, client, extra
):
    _grow(small_world, extra)
    item = ask(small_world, personas["viewer_alpha"], "vgpu_fixed")
    client.force_login(personas["platform_engineer"])
    with CaptureQueriesContext(connection) as queries:
        response = client.get(f"/sharing-requests/{item.pk}/")
    assert response.status_code == 200
    if extra:
        assert "gpu-extra-19" in response.content.decode()
    # session, user, roles, the request (relations joined), then the context: nodes, the
    # neighbours' pods, their classes, findings, earlier requests (9); once the findings list
    # is full, one count of all of them (10). Never one per node, pod or request.
    expected = 10 if extra else 9
    assert len(queries) == expected, [q["sql"][:120] for q in queries.captured_queries]


def test_the_request_form_offers_every_mode_and_says_which_are_for_own_pods_only(
    small_world, personas, client
):
    client.force_login(personas["platform_engineer"])
    every = ["mig_gi", "mig_ci", "vgpu_fixed", "vgpu_equal", "vgpu_best_effort", "mps"]
    assert sorted(_offered(client, "beta")) == sorted([*every, "time_slicing"])
    page = client.get("/sharing-requests/new/?tenant=beta").content.decode()
    scopes = re.search(r'data-scope-notes="([^"]+)"', page).group(1)
    notes = json.loads(html.unescape(scopes))
    assert set(notes["external"]) == set(every) - {"mig_gi"} | {"time_slicing"}
    assert notes["external"]["mps"].startswith(
        "for this tenant's own pods only: trust class 'external' forbids sharing by mps"
    )
    assert "mig_gi" not in notes["internal"]  # allowed between tenants: no caveat


def _offered(client, tenant: str) -> list[str]:
    page = client.get(f"/sharing-requests/new/?tenant={tenant}").content.decode()
    start = page.index('name="mode"')
    return re.findall(r'<option value="([a-z_]+)"', page[start : page.index("</select>", start)])
