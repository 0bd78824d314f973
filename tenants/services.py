"""Writes to the tenant registry."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.db import transaction

from tenants.models import Tenant, TenantNamespace, TenantPrincipal, TrustClass
from tenants.spec import TenantSpec, TenantSpecError


@dataclass
class ApplyResult:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@transaction.atomic
def tenants_apply(*, specs: list[TenantSpec]) -> ApplyResult:
    """Create or update each tenant to match its spec (namespaces, principals and viewers are
    replaced). Tenants not in the specs are left alone. All or nothing."""
    classes = {tc.slug: tc for tc in TrustClass.objects.all()}
    for spec in specs:
        if spec.trust_class not in classes:
            raise TenantSpecError(
                f"tenant {spec.slug!r}: unknown trust class {spec.trust_class!r} "
                f"(known: {', '.join(sorted(classes))})"
            )
    _reject_namespaces_owned_elsewhere(specs)
    result = ApplyResult()
    users = _users_by_name({v for spec in specs for v in spec.viewers})
    for spec in specs:
        tenant, created = Tenant.objects.get_or_create(
            slug=spec.slug, defaults={"name": spec.name, "trust_class": classes[spec.trust_class]}
        )
        changed = _apply_one(tenant, spec, classes[spec.trust_class], users, result)
        bucket = result.created if created else result.updated if changed else result.unchanged
        bucket.append(spec.slug)
    return result


def _apply_one(tenant, spec, trust_class, users, result) -> bool:  # type: ignore[no-untyped-def]
    before = _state(tenant)
    if tenant.name != spec.name or tenant.trust_class_id != trust_class.pk:
        tenant.name, tenant.trust_class = spec.name, trust_class
        tenant.save(update_fields=["name", "trust_class", "updated_at"])
    tenant.namespaces.exclude(name__in=spec.namespaces).delete()
    for ns in spec.namespaces:
        TenantNamespace.objects.get_or_create(tenant=tenant, name=ns)
    kept = {(k, n) for k, n in spec.principals}
    for principal in tenant.principals.all():
        if (principal.kind, principal.name) not in kept:
            principal.delete()
    for kind, name in spec.principals:
        TenantPrincipal.objects.update_or_create(kind=kind, name=name, defaults={"tenant": tenant})
    viewers = []
    for username in spec.viewers:
        if username in users:
            viewers.append(users[username])
        else:
            result.warnings.append(f"tenant {spec.slug!r}: viewer {username!r} has no account")
    tenant.viewers.set(viewers)
    return _state(tenant) != before


def _state(tenant: Tenant) -> tuple:
    return (
        tenant.name,
        tenant.trust_class_id,
        sorted(tenant.namespaces.values_list("name", flat=True)),
        sorted(tenant.principals.values_list("kind", "name")),
        sorted(tenant.viewers.values_list("pk", flat=True)),
    )


def _reject_namespaces_owned_elsewhere(specs: list[TenantSpec]) -> None:
    wanted = {ns: spec.slug for spec in specs for ns in spec.namespaces}
    for ns, owner in TenantNamespace.objects.filter(name__in=wanted).values_list(
        "name", "tenant__slug"
    ):
        if owner == wanted[ns]:
            continue
        if owner in {s.slug for s in specs}:
            # Moving between two tenants of this file: free it before either is applied.
            TenantNamespace.objects.filter(name=ns).delete()
            continue
        raise TenantSpecError(
            f"namespace {ns!r} already belongs to tenant {owner!r}; "
            f"remove it there before giving it to {wanted[ns]!r}"
        )


def _users_by_name(usernames: set[str]) -> dict:
    user_model = get_user_model()
    return {u.username: u for u in user_model.objects.filter(username__in=usernames)}
