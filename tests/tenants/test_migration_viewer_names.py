"""Migration tenants.0011 on an existing install: every current viewer of a tenant becomes one
of its declared viewer names, so nobody loses or gains a tenant by the upgrade and applying the
same file afterwards is "unchanged". Run with Django's migration executor: back to 0010, a
viewer as an old install kept it, forward."""

from __future__ import annotations

import pytest

from tenants.models import Tenant
from tenants.services import tenants_apply
from tenants.spec import parse_tenants_document
from tests.migration_steps import migrate, migrate_to_latest

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

BEFORE = [("tenants", "0010_tenant_slug_not_reserved")]

ENTRY = {"slug": "alpha", "name": "Alpha", "trust_class": "internal", "viewers": ["ana"]}


def test_upgrade_keeps_each_viewer_as_a_declared_name():
    apps = migrate(BEFORE)
    try:
        OldTenant = apps.get_model("tenants", "Tenant")
        OldUser = apps.get_model("auth", "User")
        internal = apps.get_model("tenants", "TrustClass").objects.get(slug="internal")
        alpha = OldTenant.objects.create(slug="alpha", name="Alpha", trust_class=internal)
        alpha.viewers.add(OldUser.objects.create(username="ana"))
        OldTenant.objects.create(slug="beta", name="Beta", trust_class=internal)
    finally:
        migrate_to_latest()
    alpha = Tenant.objects.get(slug="alpha")
    assert list(alpha.viewer_names.values_list("username", flat=True)) == ["ana"]
    assert list(alpha.viewers.values_list("username", flat=True)) == ["ana"]
    assert not Tenant.objects.get(slug="beta").viewer_names.exists()
    result = tenants_apply(specs=parse_tenants_document({"tenants": [ENTRY]}))
    assert (result.unchanged, result.updated) == (["alpha"], [])
