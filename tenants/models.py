"""Trust classes, tenants, and how namespaces and Kubernetes principals map to tenants."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from gpuposture.base.labels import words
from gpuposture.base.querysets import STAFF_ONLY, Scope, ScopedQuerySet
from gpuposture.base.roles import is_signed_in
from tenants.mapping import RESERVED_TENANT_SLUGS
from tenants.policy import (
    SHARING_MODES,
    WITH_OTHER_TENANTS,
    WITHIN_TENANT,
    PolicyDecision,
    Say,
    mode_permitted,
    request_scope,
)
from tenants.pool_taints import check_class_taint
from tenants.redaction import Field

slug_validator = RegexValidator(
    r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$",
    "Use lowercase letters, digits and hyphens (a DNS label).",
)


def validate_tenant_slug_not_reserved(value: str) -> None:
    """The system tenant `unclassified` is made by the sync, never through a form; see
    RESERVED_TENANT_SLUGS."""
    reserved_for = RESERVED_TENANT_SLUGS.get(value)
    if reserved_for:
        raise ValidationError(
            f"The slug {value!r} is reserved: pages and the API use it for {reserved_for}."
        )


class_slug_validator = RegexValidator(
    r"^[a-z][a-z0-9_]{0,39}$", "Use lowercase letters, digits and underscores."
)


def validate_pool_taints(value: object) -> None:
    """A list of exact pool taints, each key=value:NoSchedule or :NoExecute."""
    if not isinstance(value, list):
        raise ValidationError("A list of taints, e.g. dedicated=regulated:NoSchedule.")
    for item in value:
        try:
            check_class_taint(str(item))
        except ValueError as exc:
            raise ValidationError(str(exc)) from exc


class TrustClassQuerySet(ScopedQuerySet):
    # Trust classes are policy, not tenant data: every signed-in user may read them.
    scope = Scope(readers=is_signed_in)


class TrustClass(models.Model):
    """A class of tenants and the GPU sharing modes it allows with other tenants."""

    slug = models.CharField(max_length=40, unique=True, validators=[class_slug_validator])
    name = models.CharField(max_length=80)
    description = models.TextField(blank=True, max_length=2000)
    allowed_modes = models.JSONField(default=list, help_text="Sharing modes this class allows.")
    same_class_only_modes = models.JSONField(
        default=list, blank=True, help_text="Modes allowed only with tenants of this same class."
    )
    requires_dedicated_pool = models.BooleanField(default=False)
    requires_reset_attestation = models.BooleanField(default=False)
    approval_expiry_days = models.PositiveIntegerField(null=True, blank=True)
    approved_registries = models.JSONField(
        default=list,
        blank=True,
        help_text="Registries (host or host/path prefix) tenant images must come from "
        "(POD-007); empty allows any.",
    )
    # On by default (DESIGN §2: tenant images "pinned by digest"): a tag is mutable, so a class
    # must opt out of the rule explicitly, never by being created (POD-007).
    require_image_digest = models.BooleanField(
        default=True, help_text="Tenant images must be pinned by @sha256 digest (POD-007)."
    )
    rank = models.PositiveSmallIntegerField(
        default=0, help_text="Higher means more isolation demanded (sensitive is highest)."
    )
    # How bad a risk TO a tenant of this class is: multiplies the risk points of every open
    # finding affecting it (DESIGN §6), so it orders tenants, not checks.
    risk_weight = models.FloatField(
        default=1.0,
        validators=[MinValueValidator(0.1), MaxValueValidator(100)],
        help_text="Multiplies the risk points of findings affecting tenants of this class "
        "(defaults: sensitive 10, internal 2, the others 1).",
    )
    pool_taints = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_pool_taints],
        help_text="Exact taints marking this class's node pool, as key=value:effect (effect "
        "NoSchedule or NoExecute), besides GPUPOSTURE_POOL_TAINT_KEYS=<this slug> "
        "(K8S-002, POD-009).",
    )

    objects = TrustClassQuerySet.as_manager()

    class Meta:
        ordering = ["rank", "slug"]
        verbose_name_plural = "trust classes"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(risk_weight__gt=0), name="trustclass_risk_weight_positive"
            )
        ]

    def __str__(self) -> str:
        return self.slug


class TenantQuerySet(ScopedQuerySet):
    scope = Scope(paths=("",))


class Tenant(models.Model):
    """A team or customer whose workloads share GPUs with others."""

    slug = models.SlugField(
        max_length=63,
        unique=True,
        validators=[slug_validator, validate_tenant_slug_not_reserved],
    )
    name = models.CharField(max_length=120)
    trust_class = models.ForeignKey(TrustClass, on_delete=models.PROTECT, related_name="tenants")
    viewers = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="viewable_tenants"
    )
    # The one system tenant, `unclassified` (tenants.unclassified): the party of namespaces no
    # tenant claims. Kept by gpuposture, never claimed, edited or given viewers.
    is_system = models.BooleanField(default=False, db_default=False, editable=False)
    # The system tenant's namespaces as of the last score: those nobody claims whose findings
    # it carries (posture.claims), sorted; what to claim. Empty for every other tenant, whose
    # namespaces are the ones it claims (TenantNamespace).
    unclaimed_namespaces = models.JSONField(default=list, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    def viewer_usernames(self) -> list[str]:
        """Who may see the tenant, by username: the names the file declares (an account or not
        yet), then accounts given it otherwise (admin, SSO tenant map). From .all(), so a list
        prefetching "viewer_names" and "viewers" reads no more per tenant."""
        declared = [name.username for name in self.viewer_names.all()]
        given = {user.get_username() for user in self.viewers.all()} - set(declared)
        return declared + sorted(given)


class TenantViewerNameQuerySet(ScopedQuerySet):
    # Who else may read a tenant is for those who read every tenant, not for its viewers.
    scope = STAFF_ONLY


class TenantViewerName(models.Model):
    """A username the tenants file names in a tenant's `viewers` (DESIGN §9), kept as declared
    whether or not its account exists: the file is the source of truth. Access itself is
    Tenant.viewers (what visible_to joins); an account created later with a declared name is
    added there at once (tenants.signals), so SSO accounts made at first sign-in see their
    tenant without the file being applied again."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="viewer_names")
    # As Django's username (150 characters), matched exactly as the sign-in matches it.
    username = models.CharField(max_length=150, db_index=True)

    objects = TenantViewerNameQuerySet.as_manager()

    class Meta:
        ordering = ["username"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "username"], name="tenant_viewer_name_unique")
        ]

    def __str__(self) -> str:
        return self.username


class TenantMappingQuerySet(ScopedQuerySet):
    scope = Scope(paths=("tenant",))


class TenantNamespace(models.Model):
    """A Kubernetes namespace (in any cluster) that belongs to a tenant."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="namespaces")
    name = models.CharField(max_length=63, validators=[slug_validator])

    objects = TenantMappingQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["name"], name="tenant_namespace_unique_name"),
        ]

    def __str__(self) -> str:
        return self.name


class TenantPrincipal(models.Model):
    """A Kubernetes RBAC subject (group or user) that acts for a tenant."""

    class Kind(models.TextChoices):
        GROUP = "group", "Group"
        USER = "user", "User"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="principals")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    name = models.CharField(max_length=253)

    objects = TenantMappingQuerySet.as_manager()

    class Meta:
        ordering = ["kind", "name"]
        constraints = [
            models.UniqueConstraint(fields=["kind", "name"], name="tenant_principal_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"


class SharingRequestQuerySet(ScopedQuerySet):
    scope = Scope(paths=("tenant",))

    def pending(self) -> models.QuerySet:
        return self.filter(status=SharingRequest.Status.PENDING)

    def unexpired(self, now) -> models.QuerySet:
        """Approved and, at `now`, before both its own expiry and the ceiling its tenant's
        CURRENT trust class sets (decided_at + approval_expiry_days): a tenant moved into the
        sensitive class, or a class whose expiry was shortened, bounds approvals decided
        before the change too."""
        within_class = models.Q(tenant__trust_class__approval_expiry_days__isnull=True)
        periods = (
            TrustClass.objects.exclude(approval_expiry_days=None)
            .values_list("approval_expiry_days", flat=True)
            .distinct()
        )
        for days in periods:
            # Counted from the decision; from the ask if no decision time was recorded.
            start = now - timedelta(days=days)
            within_class |= models.Q(tenant__trust_class__approval_expiry_days=days) & (
                models.Q(decided_at__gt=start)
                | models.Q(decided_at__isnull=True, requested_at__gt=start)
            )
        return self.filter(status=SharingRequest.Status.APPROVED).filter(
            models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=now), within_class
        )

    def active(self, now) -> models.QuerySet:
        """Approved and unexpired at `now`: the approvals a tenant may use sharing modes under.
        A mode its current class forbids between tenants stays approved for the tenant's own
        pods (scope `within_tenant`, tenants.policy.request_scope)."""
        return self.unexpired(now)

    def in_scope(self, scope: str) -> models.QuerySet:
        """Requests whose approval covers `scope` under their tenant's CURRENT trust class
        (tenants.policy.request_scope), one query for the classes."""
        between = models.Q(pk__in=[])
        for trust_class in TrustClass.objects.all():
            modes = [m for m in SHARING_MODES if mode_permitted(trust_class, m).allowed]
            between |= models.Q(tenant__trust_class=trust_class, mode__in=modes)
        return self.filter(between) if scope == WITH_OTHER_TENANTS else self.exclude(between)


class SharingRequest(models.Model):
    """A tenant's request to use a sharing mode on a cluster (or one of its node pools), and
    the platform engineer's decision on it."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        APPROVED = "approved", "Approved"
        DENIED = "denied", "Denied"
        REVOKED = "revoked", "Revoked"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="sharing_requests")
    # A string reference: inventory sits above tenants in the import layering.
    cluster = models.ForeignKey(
        "inventory.Cluster", on_delete=models.CASCADE, related_name="sharing_requests"
    )
    node_pool = models.CharField(
        max_length=63,
        blank=True,
        help_text="Empty: every node of the cluster. Otherwise the node pool's name as its "
        "nodes' pool label gives it (e.g. cloud.google.com/gke-nodepool).",
    )
    mode = models.CharField(max_length=20)
    justification = models.TextField(max_length=2000)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="sharing_requests"
    )
    requested_at = models.DateTimeField(auto_now_add=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="sharing_decisions",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.TextField(max_length=2000, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="sharing_revocations",
    )
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoke_reason = models.TextField(max_length=2000, blank=True)

    objects = SharingRequestQuerySet.as_manager()
    # Typed by people: a reason may name neighbours the tenant's viewer must not read.
    redacted_fields = {
        "justification": Field.TYPED,
        "decision_reason": Field.TYPED,
        "revoke_reason": Field.TYPED,
    }

    class Meta:
        ordering = ["-requested_at", "-id"]
        indexes = [
            models.Index(fields=["status", "requested_at"], name="sharing_request_queue"),
            models.Index(fields=["cluster", "status"], name="sharing_request_cluster"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(decided_by=models.F("requested_by")),
                name="sharing_request_four_eyes",
            ),
        ]

    def __str__(self) -> str:
        pool = f"/{self.node_pool}" if self.node_pool else ""
        return f"#{self.pk} {self.tenant.slug}: {self.mode} on {self.cluster.name}{pool}"

    def effective_expiry(self) -> datetime | None:
        """When the approval ends: its own expiry, or sooner the ceiling of the tenant's
        current trust class counted from the decision (DESIGN §3: sensitive approvals expire
        after 90 days, whatever class the tenant had when it was approved)."""
        ends = [self.expires_at] if self.expires_at else []
        days = self.tenant.trust_class.approval_expiry_days
        start = self.decided_at or self.requested_at  # the ask, if no decision time recorded
        if days is not None and start is not None:
            ends.append(start + timedelta(days=days))
        return min(ends) if ends else None

    def policy(self, say: Say | None = None) -> PolicyDecision:
        """What the request covers under the tenant's CURRENT trust class, with the rule's
        words: a tenant since moved to a stricter class (internal_trusted to external) keeps
        its time_slicing approval for its own pods only. `say` names modes and classes in the
        rule (a page passes gpuposture.base.labels.words; the API keeps the codes)."""
        if say is None:
            return request_scope(self.tenant.trust_class, self.mode)
        return request_scope(self.tenant.trust_class, self.mode, say)

    def scope(self) -> str:
        """`with_other_tenants` or `within_tenant` (tenants.policy.REQUEST_SCOPES); a mode the
        policy does not know (written outside the services) is never shared between tenants."""
        return self.policy().scope or WITHIN_TENANT

    def scope_note(self) -> str:
        """The scope's caveat for the pages, in words; "" for a request not limited to the
        tenant."""
        decision = self.policy(words)
        return decision.rule if decision.scope == WITHIN_TENANT else ""

    def is_active(self, now) -> bool:
        return self.state(now) == self.Status.APPROVED

    def state(self, now) -> str:
        """The status as a person reads it: an approval past its expiry (its own or its
        class's) is "expired"."""
        if self.status != self.Status.APPROVED:
            return self.status
        ends = self.effective_expiry()
        if ends is not None and ends <= now:
            return "expired"
        return self.status
