"""A person the tenants file names as a viewer holds the tenant_viewer role (DESIGN §9: `viewers`
are "gpuposture usernames who may see this tenant (tenant_viewer role)"). The tenant alone gives
an account without the role nothing to see, so a viewer declared in the file, whose account SSO
creates at the first sign-in with no role of its own, would find every page empty. The role
follows the declaration as it follows a tenant the IdP's tenant map grants
(gpuposture.base.sso_claims). Taking the name out takes the tenant, not the role: with no
tenant, the role shows nothing."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, Group

from audit.services import Actor, audit_record
from gpuposture.base.roles import ROLES, TENANT_VIEWER


def viewer_role_grant(*, user: AbstractBaseUser, actor: Actor) -> bool:
    """Give `user` the tenant_viewer role if it lacks it, with an audit event on the user;
    True if it changed anything."""
    roles = sorted(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
    if TENANT_VIEWER in roles:
        return False
    group, _created = Group.objects.get_or_create(name=TENANT_VIEWER)
    user.groups.add(group)
    user.__dict__.pop("_gpuposture_roles", None)  # the roles cached for this request
    audit_record(
        actor=actor,
        action="update",
        obj=user,
        before={"roles": roles},
        after={"roles": sorted([*roles, TENANT_VIEWER])},
    )
    return True
