"""An account created with a username the tenants file declares as a viewer gets the tenant (and
the tenant_viewer role, tenants.viewer_role) at once (DESIGN §9 `viewers` are usernames):
whoever creates it, the admin, SSO at the first sign-in (allauth), createsuperuser or the shell."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from tenants.models import Tenant
from tenants.viewer_role import viewer_role_grant

# Who the audit log says gave the role: the declaration, read when the account appeared.
ACTOR = "tenants file (declared viewer)"


def declared_viewer_created(
    *, instance: AbstractBaseUser, created: bool, raw: bool = False, **_kwargs: Any
) -> None:
    """post_save of the user model. Only at creation: afterwards the tenant is the account's
    (Tenant.viewers) until the file takes the name out, an admin or the SSO tenant map takes
    it away; a later save never gives it back behind their back. Not for fixtures (`raw`),
    whose rows carry their own relations."""
    if not created or raw:
        return
    declaring = Tenant.objects.filter(viewer_names__username=instance.get_username())
    tenants = list(declaring.exclude(is_system=True))
    if tenants:
        instance.viewable_tenants.add(*tenants)  # Tenant.viewers, seen from the account
        viewer_role_grant(user=instance, actor=ACTOR)
