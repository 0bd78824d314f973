"""What the audit log keeps of trust classes, tenants and their mappings (before and after a
change): names and slugs rather than ids, so an event reads on its own."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import models

from audit.services import model_to_audit_dict
from tenants.models import Tenant, TenantNamespace, TenantPrincipal, TrustClass


def trust_class_state(trust_class: TrustClass) -> dict[str, Any]:
    return model_to_audit_dict(trust_class)


def tenant_state(tenant: Tenant) -> dict[str, Any]:
    """The tenant's own fields and viewers; namespaces and principals have their own events.
    `viewers` are the accounts that see the tenant; `viewers_without_account`, there only when
    some are, the declared names whose account does not exist yet (they see it once created)."""
    state = {
        "slug": tenant.slug,
        "name": tenant.name,
        "trust_class": tenant.trust_class.slug,
        "viewers": sorted(tenant.viewers.values_list("username", flat=True)),
    }
    declared = set(tenant.viewer_names.values_list("username", flat=True))
    if declared:
        accounts = get_user_model().objects.filter(username__in=declared)
        waiting = declared - set(accounts.values_list("username", flat=True))
        if waiting:
            state["viewers_without_account"] = sorted(waiting)
    return state


def namespace_state(namespace: TenantNamespace) -> dict[str, Any]:
    return {"name": namespace.name, "tenant": namespace.tenant.slug}


def principal_state(principal: TenantPrincipal) -> dict[str, Any]:
    return {"kind": principal.kind, "name": principal.name, "tenant": principal.tenant.slug}


def tenants_audit_state(obj: models.Model) -> dict[str, Any]:
    """The state of any model of this app (what the admin records)."""
    if isinstance(obj, Tenant):
        return tenant_state(obj)
    if isinstance(obj, TenantNamespace):
        return namespace_state(obj)
    if isinstance(obj, TenantPrincipal):
        return principal_state(obj)
    if isinstance(obj, TrustClass):
        return trust_class_state(obj)
    return model_to_audit_dict(obj)
