"""What people type is read for other tenants' names on every surface a tenant viewer reaches
(docs/access.md): a sharing request's justification and its decision, and a reset's note,
hide the other tenant's display name, namespace and its pods, named bare as people do
("before Beta Corp's inference-0"), while the viewer's own names stay. Those who read every
tenant read what was typed."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.utils import timezone

from gpuposture.base import roles
from tenants.redaction import HIDDEN_OBJECT, HIDDEN_TENANT
from tests.conftest import api_client, make_user
from tests.security.test_unclaimed_party_redaction import UNCLAIMED_POD, unclaimed_world

__all__ = ["unclaimed_world"]  # a fixture, used by name

pytestmark = pytest.mark.django_db

JUSTIFICATION = (
    "Beta Corp already time-slices gpu-ts-1 from beta-prod (inference-0); trainer-0 waits."
)
# Beta's other pod, named bare by the deciding engineer.
DENIAL = "Not while batch-done of beta still holds a replica."
NOTE = "Wiped after Beta Corp's inference-0, before alpha's trainer-0."
THEIRS = re.compile(r"Beta Corp|beta-prod|inference-0|batch-done|(?<![\w-])beta(?![\w-])")


def _page(user, url: str) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def _no_beta(text: str) -> None:
    found = THEIRS.search(text)
    assert found is None, text[max(0, found.start() - 80) : found.end() + 40]


@pytest.fixture
def denied_request(small_world, personas):
    """Alpha's request, asked and denied by two platform engineers, each naming beta."""
    from sharing.services import sharing_request_create, sharing_request_deny
    from tenants.models import Tenant

    request = sharing_request_create(
        tenant=Tenant.objects.get(slug="alpha"),
        cluster=small_world,
        mode="mig_gi",
        justification=JUSTIFICATION,
        user=personas["platform_engineer"],
    )
    second = make_user("plat-2", roles.PLATFORM_ENGINEER)
    return sharing_request_deny(request=request, user=second, reason=DENIAL)


def test_a_sharing_requests_reasons_hide_the_other_tenant_from_its_viewer(denied_request, personas):
    viewer = api_client(personas["viewer_alpha"])
    detail = viewer.get(f"/api/v1/sharing-requests/{denied_request.pk}/")
    assert detail.status_code == 200
    body = detail.json()
    assert body["justification"] == (
        f"{HIDDEN_TENANT} already time-slices gpu-ts-1 from (another tenant's namespace) "
        f"({HIDDEN_OBJECT}); trainer-0 waits."
    )
    assert body["decision_reason"] == (
        f"Not while {HIDDEN_OBJECT} of {HIDDEN_TENANT} still holds a replica."
    )
    listed = viewer.get("/api/v1/sharing-requests/")
    assert listed.json()["count"] == 1
    page = _page(personas["viewer_alpha"], f"/sharing-requests/{denied_request.pk}/")
    for text in (detail.content.decode(), listed.content.decode(), page):
        _no_beta(text)
    assert "trainer-0 waits" in page  # alpha's own pod is theirs to read

    lead = api_client(personas["security_lead"]).get(
        f"/api/v1/sharing-requests/{denied_request.pk}/"
    )
    assert lead.json()["justification"] == JUSTIFICATION
    assert lead.json()["decision_reason"] == DENIAL
    page = _page(personas["platform_engineer"], f"/sharing-requests/{denied_request.pk}/")
    assert "Beta Corp already time-slices" in page
    assert (
        api_client(personas["viewer_beta"])
        .get(f"/api/v1/sharing-requests/{denied_request.pk}/")
        .status_code
        == 404
    )


def test_a_reset_note_hides_the_other_tenants_pod_named_bare(small_world, personas):
    from telemetry.models import ResetAttestation
    from tenants.models import Tenant

    ResetAttestation.objects.create(
        cluster=small_world,
        node="gpu-ts-1",
        reset_at=timezone.now(),
        method="reboot",
        previous_tenant=Tenant.objects.get(slug="beta"),
        next_tenant=Tenant.objects.get(slug="alpha"),
        recorded_by="plat",
        note=NOTE,
    )
    alpha = api_client(personas["viewer_alpha"]).get("/api/v1/reset-attestations/").json()
    assert alpha["results"][0]["note"] == (
        f"Wiped after {HIDDEN_TENANT}'s {HIDDEN_OBJECT}, before alpha's trainer-0."
    )
    beta = api_client(personas["viewer_beta"]).get("/api/v1/reset-attestations/").json()
    assert beta["results"][0]["note"] == (
        f"Wiped after Beta Corp's inference-0, before {HIDDEN_TENANT}'s {HIDDEN_OBJECT}."
    )
    _no_beta(_page(personas["viewer_alpha"], "/utilisation/"))
    lead = api_client(personas["security_lead"]).get("/api/v1/reset-attestations/").json()
    assert lead["results"][0]["note"] == NOTE


def test_the_pod_names_hidden_in_typed_text_are_other_parties_not_the_viewers(
    unclaimed_world, personas
):
    """Alpha's viewer: ext's pod and the unclassified party's are hidden by bare name, alpha's
    own and the platform's (kube-system) are not."""
    from inventory.presenter import hidden_scope_for

    scope = hidden_scope_for(personas["viewer_alpha"])
    assert {"debug-0", UNCLAIMED_POD} <= scope.typed_objects
    assert not {"train-0", "rocm-plugin-qz"} & scope.typed_objects


def test_a_name_the_viewers_own_pod_bears_too_is_theirs():
    from inventory.binding_names import their_pods

    found = their_pods(
        theirs={"inference-0", "trainer-0"},
        own={"trainer-0"},
        unclaimed_pods={"3:sandbox/nb-0", "3:gpu-operator/plugin-x", "4:sandbox/nb-1"},
        unclaimed={3: frozenset({"sandbox"})},
    )
    assert found == {"inference-0", "nb-0"}
