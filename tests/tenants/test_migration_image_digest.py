"""Migration tenants.0008 on an existing install: the seed tenant classes whose image policy was
never set gain the digest rule (POD-007); platform, a class of the organisation's own and a
seed class whose admin listed registries but left the digest off keep what they had. Run with
Django's migration executor: back to 0007, classes as an old install left them, forward."""

from __future__ import annotations

import pytest

from tenants.models import TrustClass
from tests.migration_steps import migrate, migrate_to_latest

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

BEFORE = [("tenants", "0007_trustclass_pool_taints")]


def test_upgrade_requires_a_digest_only_where_the_image_policy_was_never_set():
    apps = migrate(BEFORE)
    try:
        OldTrustClass = apps.get_model("tenants", "TrustClass")
        OldTrustClass.objects.update(require_image_digest=False, approved_registries=[])
        # The admin listed registries on external and chose no digest: that is a choice.
        OldTrustClass.objects.filter(slug="external").update(
            approved_registries=["registry.example.internal"]
        )
        OldTrustClass.objects.create(slug="partners", name="Partners")  # the org's own class
    finally:
        migrate_to_latest()
    digest = dict(TrustClass.objects.values_list("slug", "require_image_digest"))
    assert digest == {
        "platform": False,
        "internal_trusted": True,
        "internal": True,
        "external": False,
        "sensitive": True,
        "partners": False,
    }
