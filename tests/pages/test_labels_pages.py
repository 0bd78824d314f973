"""Pages read enum codes as words through gpuposture.base.labels (docs/access.md "one mapping
serves every template"): sharing modes, scopes, strategies and trust classes on the sharing
request, overview and tenant pages; the API keeps the codes."""

from __future__ import annotations

import html as htmllib
import re

import pytest
from django.test import Client

from posture.services import posture_evaluate
from tenants.models import SharingRequest, Tenant, TrustClass
from tests.conftest import api_client


def _page(user, url: str) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def _text(html: str) -> str:
    """What a reader sees: tags and attribute values dropped (values keep the codes)."""
    return htmllib.unescape(re.sub(r"<[^>]*>", " ", html))


@pytest.fixture
def trusted_world(small_world, personas):
    """alpha moved to internal_trusted, with two mig_gi requests (one earlier, denied)."""
    alpha = Tenant.objects.get(slug="alpha")
    alpha.trust_class = TrustClass.objects.get(slug="internal_trusted")
    alpha.save()
    posture_evaluate()
    for reason, status in (("older ask", "denied"), ("now", "pending")):
        request = SharingRequest.objects.create(
            tenant=alpha,
            cluster=small_world,
            mode="mig_gi",
            justification=reason,
            status=status,
            requested_by=personas["viewer_alpha"],
        )
    return request


@pytest.mark.django_db
def test_sharing_request_list_filters_and_trust_class_read_as_words(trusted_world, personas):
    html = _page(personas["platform_engineer"], "/sharing-requests/")
    assert '<option value="mig_gi">MIG GPU instance</option>' in html
    assert '<option value="vgpu_fixed">vGPU, fixed share</option>' in html
    assert '<option value="time_slicing">time-slicing</option>' in html
    assert '<option value="with_other_tenants">with other tenants</option>' in html
    assert '<option value="within_tenant">within tenant</option>' in html
    text = _text(html)
    assert "internal trusted" in text
    for code in ("internal_trusted", "mig_gi", "vgpu_fixed", "time_slicing", "within_tenant"):
        assert code not in text, code
    # The filter still takes the code.
    assert f"#{trusted_world.pk}" in _page(
        personas["platform_engineer"], "/sharing-requests/?mode=mig_gi&scope=with_other_tenants"
    )


@pytest.mark.django_db
def test_sharing_request_detail_reads_rule_strategy_and_earlier_modes_as_words(
    trusted_world, personas
):
    html = _page(personas["platform_engineer"], f"/sharing-requests/{trusted_world.pk}/")
    text = _text(html)
    assert "trust class 'internal trusted' allows MIG GPU instance" in text
    assert "(trust class internal trusted)" in text
    sharing_today = html.split("Sharing today")[1].split("</table>")[0]
    assert "time-slicing" in sharing_today and "time_slicing" not in sharing_today
    earlier = html.split("Earlier requests")[1].split("</table>")[0]
    assert "MIG GPU instance" in earlier and "mig_gi" not in earlier
    # Everything but the open findings' stored titles (SHARE-003's prose, not labels here).
    own = _text(html.split("<h3>Open findings there")[0])
    assert "internal_trusted" not in own and "time_slicing" not in own
    # The mode's code stays once, in brackets beside its words, for people matching the API.
    assert own.count("mig_gi") == 1 and "(mig_gi)" in own


@pytest.mark.django_db
def test_sharing_request_api_keeps_codes(trusted_world, personas):
    body = api_client(personas["platform_engineer"]).get(
        f"/api/v1/sharing-requests/{trusted_world.pk}/"
    )
    data = body.json()
    assert data["mode"] == "mig_gi"
    assert "trust class 'internal_trusted' allows mig_gi" in str(data)


@pytest.mark.django_db
def test_overview_and_tenant_list_read_trust_class_as_words(trusted_world, personas):
    for url in ("/", "/tenants/"):
        html = _page(personas["security_lead"], url)
        # The ranked tenants table's Trust class column.
        table = _text(html.split('class="data ranked"')[1].split("</table>")[0])
        assert "internal trusted" in table, url
        assert "internal_trusted" not in table, url


@pytest.fixture
def exposed_world(small_world):
    """gpu-ts-1 runs Container Toolkit 1.17.4 and DCGM exporter 3.6.1, below nvidia-5659 and
    nvidia-5857; scored."""
    from inventory.bulletins.patch_refresh import nodes_patch_refresh
    from inventory.bulletins.store import bulletins_import_paths
    from inventory.models import Node
    from tests.realworld import realworld

    bulletins_import_paths(paths=[str(realworld("csaf", f"nvidia-{n}.json")) for n in ("5659",)])
    node = Node.objects.get(name="gpu-ts-1")
    node.data["container_toolkit_version"] = "1.17.4"
    node.save(update_fields=["data"])
    nodes_patch_refresh()
    posture_evaluate()
    return node


@pytest.mark.django_db
def test_patch_page_names_components_in_words(exposed_world, personas):
    html = _page(personas["security_lead"], "/patch/")
    chart = html.split('id="patch-chart"')[1].split("</script>")[0]
    assert "Container Toolkit" in chart and "container_toolkit" not in chart
    assert "device plugin" in chart and "device_plugin" not in chart
    text = _text(html.split('id="patch-chart"')[0] + html.split("</script>", 1)[-1])
    assert "Container Toolkit 1.17.8" in text
    for code in ("container_toolkit", "device_plugin", "gpu_operator", "dcgm_exporter"):
        assert code not in text, code


@pytest.mark.django_db
def test_node_page_names_components_and_remedies_in_words(exposed_world, personas):
    # nvidia-5659 states no remediation; one as the demo's bulletins give them (CSAF category).
    exposed_world.refresh_from_db()
    exposed_world.patch_exposures[0]["remedies"] = [
        {"category": "vendor_fix", "details": "Upgrade to 1.17.8 or later.", "url": ""}
    ]
    exposed_world.save(update_fields=["patch_exposures"])
    html = _page(personas["security_lead"], f"/nodes/lab/{exposed_world.name}/")
    patch = _text(html.split('id="patch-h"')[1].split("</section>")[0])
    assert "Container Toolkit" in patch and "vendor fix" in patch and "GPU Operator" in patch
    assert "the node does not run the MIG manager" in patch
    for code in ("container_toolkit", "vendor_fix", "gpu_operator", "mig_manager"):
        assert code not in patch, code


@pytest.mark.django_db
def test_stack_title_names_the_component_in_words_and_the_api_keeps_codes(exposed_world, personas):
    from posture.models import Finding

    finding = Finding.objects.get(check_id="STACK-002", subject_name=exposed_world.name)
    assert finding.title.startswith(f"GPU node {exposed_world.name}: Container Toolkit 1.17.4"), (
        finding.title
    )
    body = api_client(personas["security_lead"]).get(f"/api/v1/findings/{finding.pk}/").json()
    assert "container_toolkit 1.17.4" in body["evidence"]["components"]
    assert {e["component"] for e in body["evidence"]["exposures"]} >= {"container_toolkit"}
    html = _page(personas["security_lead"], f"/findings/{finding.pk}/")
    # The exposures' `component` reads as words; `components` is prose the evidence keeps.
    assert "<td>Container Toolkit</td>" in html.split("evidence-box")[1]


@pytest.mark.django_db
def test_finding_evidence_reads_modes_and_trust_classes_in_words(trusted_world, personas):
    from posture.models import Finding

    finding = Finding.objects.filter(check_id="SHARE-003").first()
    assert finding is not None
    raw = api_client(personas["security_lead"]).get(f"/api/v1/findings/{finding.pk}/").json()
    assert "time_slicing" in str(raw["evidence"]) and "internal_trusted" in str(raw["evidence"])
    html = _page(personas["security_lead"], f"/findings/{finding.pk}/")
    evidence = _text(html.split("evidence-box")[1].split("</section>")[0])
    assert "time-slicing" in evidence and "internal trusted" in evidence
    # A value of a known key reads as words (the rule's and the basis' prose are stored text).
    box = html.split("evidence-box")[1]
    for code in ("time_slicing", "internal_trusted"):
        assert f"<td>{code}</td>" not in box, code
    assert "<td>time-slicing</td>" in box and "<td>internal trusted</td>" in box
