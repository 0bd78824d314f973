"""DESIGN §9: each command exits non-zero with a clear message on bad input; export_findings
writes its data to stdout and its summary to stderr."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


def _export(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("export_findings", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--tenant", "gamma"], ["no tenant 'gamma'", "alpha", "beta"]),
        (["--cluster", "elsewhere"], ["no cluster 'elsewhere'", "lab"]),
        (["--check", "SHARE-999"], ["no check 'SHARE-999'"]),
    ],
)
def test_export_findings_refuses_what_does_not_exist(small_world, args, words):
    with pytest.raises(CommandError) as refused:
        _export(*args)
    assert all(word in str(refused.value) for word in words)


def test_export_findings_names_tenants_and_clusters_as_the_api_does(small_world):
    by_slug, summary = _export("--tenant", "alpha", "--cluster", "lab")
    rows = json.loads(by_slug)
    assert rows and all("alpha" in row["tenants"] for row in rows)
    assert summary.strip() == f"{len(rows)} findings exported"
    by_name, _ = _export("--tenant", "Team Alpha", "--cluster", str(small_world.id))
    assert json.loads(by_name) == rows


def test_a_tenant_with_no_findings_is_an_empty_export_not_an_error(small_world):
    from tenants.models import Tenant, TrustClass

    Tenant.objects.create(slug="gamma", name="Gamma", trust_class=TrustClass.objects.first())
    out, err = _export("--tenant", "gamma")
    assert json.loads(out) == [] and err.strip() == "0 findings exported"
