"""Writes to the tenant registry."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.db.models.functions import Lower

from audit.services import CREATE, DELETE, Actor, audit_change, audit_record
from gpuposture.base.rescore import rescore_request
from tenants.audit_state import (
    namespace_state,
    principal_state,
    tenant_state,
    trust_class_state,
)
from tenants.mapping import PLATFORM_CLASS, UNCLASSIFIED, UNCLASSIFIED_NAME
from tenants.models import Tenant, TenantNamespace, TenantPrincipal, TenantViewerName, TrustClass
from tenants.spec import TenantSpec, TenantSpecError, parse_tenants_document
from tenants.viewer_role import viewer_role_grant


@dataclass
class ApplyResult:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@transaction.atomic
def tenants_apply(*, specs: list[TenantSpec], actor: Actor = None) -> ApplyResult:
    """Create or update each tenant to match its spec (namespaces, principals and viewers are
    replaced). Tenants not in the specs are left alone. All or nothing. Every change is an
    audit event by `actor` (a user, or a command name such as "manage.py apply_tenants"):
    the tenant's own fields and viewers, and each namespace or principal mapping added,
    moved or removed."""
    classes = {tc.slug: tc for tc in TrustClass.objects.all()}
    for spec in specs:
        if spec.trust_class not in classes:
            raise TenantSpecError(
                f"tenant {spec.slug!r}: unknown trust class {spec.trust_class!r} "
                f"(known: {', '.join(sorted(classes))})"
            )
    _reject_namespaces_owned_elsewhere(specs, actor)
    result = ApplyResult()
    users = _users_by_name({v for spec in specs for v in spec.viewers})
    near_misses = _case_variants({v for spec in specs for v in spec.viewers} - set(users))
    for spec in specs:
        tenant, created = Tenant.objects.get_or_create(
            slug=spec.slug, defaults={"name": spec.name, "trust_class": classes[spec.trust_class]}
        )
        changed = _apply_one(
            tenant, spec, classes[spec.trust_class], (users, near_misses), result, actor, created
        )
        bucket = result.created if created else result.updated if changed else result.unchanged
        bucket.append(spec.slug)
    if result.created or result.updated:
        # A namespace or a class moved: any cluster's findings may change owner or weight.
        rescore_request(everything=True, reason="tenants")
    return result


@transaction.atomic
def tenant_update(
    *, tenant: Tenant, changes: dict[str, Any], partial: bool, actor: Actor = None
) -> ApplyResult:
    """Update one tenant from fields of the tenants file's shape (the API's PATCH and PUT):
    with `partial`, the fields given change and the others keep their values; without, the
    fields left out are emptied (namespaces, principals, viewers), as a POST or the file
    replaces them. Validated and applied exactly as apply_tenants is (tenants_apply: audit
    events, re-score). The slug is the tenant's stable id: a different one is refused."""
    if tenant.is_system:
        raise TenantSpecError(
            f"tenant {tenant.slug!r} is kept by gpuposture: claim its namespaces for a real "
            "tenant, or list them as platform namespaces, instead of editing it"
        )
    slug = changes.get("slug", tenant.slug)
    if slug != tenant.slug:
        raise TenantSpecError(
            f"slug: {slug!r} differs from {tenant.slug!r}; a tenant's slug is its stable id "
            "and never changes (declare a new tenant with POST instead)"
        )
    item = {**(tenant_spec_fields(tenant) if partial else {}), **changes, "slug": tenant.slug}
    (spec,) = parse_tenants_document({"tenants": [item]})
    return tenants_apply(specs=[spec], actor=actor)


def tenant_spec_fields(tenant: Tenant) -> dict[str, Any]:
    """The tenant as its entry in the tenants file (DESIGN §9)."""
    return {
        "slug": tenant.slug,
        "name": tenant.name,
        "trust_class": tenant.trust_class.slug,
        "namespaces": list(tenant.namespaces.values_list("name", flat=True)),
        "principals": [f"{p.kind}:{p.name}" for p in tenant.principals.all()],
        # Declared names without an account too; and no one's access goes by a PATCH of
        # another field.
        "viewers": tenant.viewer_usernames(),
    }


def _apply_one(tenant, spec, trust_class, accounts, result, actor, created) -> bool:
    before = _state(tenant)
    audited_before = None if created else tenant_state(tenant)
    if tenant.name != spec.name or tenant.trust_class_id != trust_class.pk:
        tenant.name, tenant.trust_class = spec.name, trust_class
        tenant.save(update_fields=["name", "trust_class", "updated_at"])
    _apply_viewers(tenant, spec, accounts, result, actor)
    if created:
        audit_record(actor=actor, action=CREATE, obj=tenant, after=tenant_state(tenant))
    else:
        audit_change(actor=actor, obj=tenant, before=audited_before, after=tenant_state(tenant))
    _apply_namespaces(tenant, spec, actor)
    _apply_principals(tenant, spec, actor)
    return _state(tenant) != before


def _apply_viewers(
    tenant: Tenant, spec: TenantSpec, accounts, result: ApplyResult, actor: Actor
) -> None:
    """The declared names are kept as the file gives them; the accounts that exist get the
    tenant and the tenant_viewer role now, the others when they are created
    (tenants.signals). A name taken out of the file takes the tenant from its account."""
    users, near_misses = accounts
    for username in spec.viewers:
        if username in users:
            viewer_role_grant(user=users[username], actor=actor)
            continue
        warning = (
            f"tenant {spec.slug!r}: viewer {username!r} has no account yet; the name is kept "
            "and the account gets the tenant when it is created"
        )
        if username.lower() in near_misses:
            others = ", ".join(repr(u) for u in near_misses[username.lower()])
            warning += f" (usernames are case-sensitive: {others} is not given it)"
        result.warnings.append(warning)
    tenant.viewers.set([users[u] for u in spec.viewers if u in users])
    tenant.viewer_names.exclude(username__in=spec.viewers).delete()
    kept = set(tenant.viewer_names.values_list("username", flat=True))
    TenantViewerName.objects.bulk_create(
        TenantViewerName(tenant=tenant, username=u) for u in spec.viewers if u not in kept
    )


def _apply_namespaces(tenant: Tenant, spec: TenantSpec, actor: Actor) -> None:
    for namespace in tenant.namespaces.exclude(name__in=spec.namespaces):
        _delete_audited(namespace, namespace_state(namespace), actor)
    for name in spec.namespaces:
        namespace, created = TenantNamespace.objects.get_or_create(tenant=tenant, name=name)
        if created:
            audit_record(
                actor=actor, action=CREATE, obj=namespace, after=namespace_state(namespace)
            )


def _apply_principals(tenant: Tenant, spec: TenantSpec, actor: Actor) -> None:
    kept = {(k, n) for k, n in spec.principals}
    for principal in tenant.principals.all():
        if (principal.kind, principal.name) not in kept:
            _delete_audited(principal, principal_state(principal), actor)
    for kind, name in spec.principals:
        principal = TenantPrincipal.objects.filter(kind=kind, name=name).first()
        if principal is None:
            principal = TenantPrincipal.objects.create(kind=kind, name=name, tenant=tenant)
            audit_record(
                actor=actor, action=CREATE, obj=principal, after=principal_state(principal)
            )
        elif principal.tenant_id != tenant.pk:
            # Another tenant's principal (not in this file) moves to this one: say so.
            before = principal_state(principal)
            principal.tenant = tenant
            principal.save(update_fields=["tenant"])
            audit_change(
                actor=actor, obj=principal, before=before, after=principal_state(principal)
            )


def _delete_audited(obj: TenantNamespace | TenantPrincipal, state: dict, actor: Actor) -> None:
    """Record, then delete (one transaction: neither happens without the other)."""
    audit_record(actor=actor, action=DELETE, obj=obj, before=state)
    obj.delete()


def _state(tenant: Tenant) -> tuple:
    return (
        tenant.name,
        tenant.trust_class_id,
        sorted(tenant.namespaces.values_list("name", flat=True)),
        sorted(tenant.principals.values_list("kind", "name")),
        sorted(tenant.viewers.values_list("pk", flat=True)),
        sorted(tenant.viewer_names.values_list("username", flat=True)),
    )


def _reject_namespaces_owned_elsewhere(specs: list[TenantSpec], actor: Actor) -> None:
    wanted = {ns: spec.slug for spec in specs for ns in spec.namespaces}
    for namespace in TenantNamespace.objects.filter(name__in=wanted).select_related("tenant"):
        owner = namespace.tenant.slug
        if owner == wanted[namespace.name]:
            continue
        if owner in {s.slug for s in specs}:
            # Moving between two tenants of this file: free it before either is applied.
            _delete_audited(namespace, namespace_state(namespace), actor)
            continue
        raise TenantSpecError(
            f"namespace {namespace.name!r} already belongs to tenant {owner!r}; "
            f"remove it there before giving it to {wanted[namespace.name]!r}"
        )


@transaction.atomic
def trust_class_image_policy_set(
    *,
    trust_class: TrustClass,
    approved_registries: list[str],
    require_image_digest: bool,
    actor: Actor = None,
) -> TrustClass:
    """Set where the class's tenant images must come from (POD-007), as an audit event."""
    before = trust_class_state(trust_class)
    trust_class.approved_registries = list(approved_registries)
    trust_class.require_image_digest = require_image_digest
    trust_class.save(update_fields=["approved_registries", "require_image_digest"])
    audit_change(actor=actor, obj=trust_class, before=before, after=trust_class_state(trust_class))
    rescore_request(everything=True, reason="trust class")
    return trust_class


@transaction.atomic
def trust_class_update(
    *, trust_class: TrustClass, changes: dict[str, Any], actor: Actor = None
) -> TrustClass:
    """Change a trust class's editable fields (the API's PATCH, as the admin does): validated
    by the model, one audit event in the shape the admin records, and a re-score of every
    cluster (the weights and allowed modes judge every tenant of the class). The slug is the
    class's stable id (tenants, settings and taints name it): it is never in `changes`."""
    if "slug" in changes:
        raise ValueError("a trust class's slug never changes")  # the API refuses it first
    before = trust_class_state(trust_class)
    for name, value in changes.items():
        setattr(trust_class, name, value)
    trust_class.full_clean(validate_unique=False)
    after = trust_class_state(trust_class)
    if not audit_change(actor=actor, obj=trust_class, before=before, after=after):
        return trust_class  # nothing changed: no event, no save, no re-score
    trust_class.save(update_fields=list(changes))
    rescore_request(everything=True, reason="trust class")
    return trust_class


def trust_class_pool_taints_set(
    *, trust_class: TrustClass, pool_taints: list[str], actor: Actor = None
) -> TrustClass:
    """Set the exact taints that mark the class's node pool (K8S-002, POD-009), each
    key=value:NoSchedule or :NoExecute, as an audit event."""
    before = trust_class_state(trust_class)
    trust_class.pool_taints = [t.strip() for t in pool_taints]
    trust_class.full_clean(validate_unique=False, validate_constraints=False)
    trust_class.save(update_fields=["pool_taints"])
    audit_change(actor=actor, obj=trust_class, before=before, after=trust_class_state(trust_class))
    return trust_class


def _users_by_name(usernames: set[str]) -> dict:
    user_model = get_user_model()
    return {u.username: u for u in user_model.objects.filter(username__in=usernames)}


def _case_variants(usernames: set[str]) -> dict[str, list[str]]:
    """The accounts whose username differs from one of `usernames` only in case, by the
    lowered name: what the warning for a declared name without an account points at."""
    if not usernames:
        return {}
    lowered = {u.lower() for u in usernames}
    found: dict[str, list[str]] = {}
    accounts = get_user_model().objects.annotate(lowered=Lower("username"))
    for username in accounts.filter(lowered__in=lowered).values_list("username", flat=True):
        found.setdefault(username.lower(), []).append(username)
    return found


# Who the audit log says created or moved the system tenant: the setting, not a person.
SYSTEM_ACTOR = "GPUPOSTURE_UNCLASSIFIED_CLASS"


@transaction.atomic
def unclassified_tenant_ensure() -> Tenant:
    """The system tenant `unclassified`, created on first use and kept on the class
    GPUPOSTURE_UNCLASSIFIED_CLASS names (a changed setting moves it). It is the party of every
    namespace no tenant claims that is not the platform's: the overview lists it, checks
    affect it, but no namespace maps to it, no one views it as a tenant and no file edits it."""
    slug = settings.GPUPOSTURE_UNCLASSIFIED_CLASS
    if slug == PLATFORM_CLASS:  # a worker runs no system check (tenants.checks)
        raise ImproperlyConfigured(
            f"GPUPOSTURE_UNCLASSIFIED_CLASS={slug!r}: namespaces nobody owns are never judged "
            "as the platform's; use external (the default) or another class"
        )
    trust_class = TrustClass.objects.filter(slug=slug).first()
    if trust_class is None:
        raise ImproperlyConfigured(
            f"GPUPOSTURE_UNCLASSIFIED_CLASS={slug!r} names no trust class "
            f"(known: {', '.join(TrustClass.objects.values_list('slug', flat=True))})"
        )
    tenant, created = Tenant.objects.get_or_create(
        slug=UNCLASSIFIED,
        defaults={"name": UNCLASSIFIED_NAME, "trust_class": trust_class, "is_system": True},
    )
    if created:
        audit_record(actor=SYSTEM_ACTOR, action=CREATE, obj=tenant, after=tenant_state(tenant))
    elif (tenant.trust_class_id, tenant.is_system) != (trust_class.pk, True):
        before = tenant_state(tenant)
        tenant.trust_class, tenant.is_system = trust_class, True
        tenant.save(update_fields=["trust_class", "is_system", "updated_at"])
        audit_change(actor=SYSTEM_ACTOR, obj=tenant, before=before, after=tenant_state(tenant))
    return tenant


def unclassified_namespaces_set(names: list[str]) -> None:
    """Record the namespaces the system tenant stands for (the last score's): derived data,
    like a score, so neither audited nor a change of the tenant (updated_at stays)."""
    Tenant.objects.filter(is_system=True).update(unclaimed_namespaces=names)
