"""Findings, posture runs and tenant scores."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import URLValidator
from django.db import models
from django.utils import timezone

from gpuposture.base import enums, finding_status
from gpuposture.base.choices import text_choices
from gpuposture.base.querysets import STAFF_ONLY, Scope, ScopedQuerySet
from inventory.models import Cluster
from posture.rules.drift.changes import change_after
from posture.rules.stack.accepted import BEYOND, exposure_beyond
from tenants.models import Tenant
from tenants.redaction import Field

Severity = text_choices(enums.Severity)
SEVERITY_ORDER = {s: enums.Severity.rank(s) for s in enums.Severity.values()}
# A ticket link opens in the reader's browser: only web addresses (no javascript:, no ftp).
WEB_URL = URLValidator(schemes=["http", "https"])


class FindingQuerySet(ScopedQuerySet):
    # A tenant viewer sees the findings that affect one of their tenants.
    scope = Scope(linked="tenants")


class Finding(models.Model):
    """One cause: one check firing on one subject (DESIGN §5), with the tenants it affects."""

    Status = text_choices(enums.FindingStatus)

    check_id = models.CharField(max_length=20, db_index=True)
    severity = models.CharField(max_length=10, choices=Severity.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    # The tenants the cause affects (none for a cluster-wide one): a tenant's page and score
    # read its findings through this relation.
    tenants = models.ManyToManyField(
        Tenant, through="FindingTenant", related_name="findings", blank=True
    )
    # No index of its own: finding_cluster_status leads with the cluster.
    cluster = models.ForeignKey(
        Cluster, on_delete=models.CASCADE, related_name="findings", db_index=False
    )
    subject_kind = models.CharField(max_length=40)
    subject_namespace = models.CharField(max_length=63, blank=True)
    subject_name = models.CharField(max_length=320)
    key = models.CharField(max_length=200, blank=True)
    # How many workloads, pods, GPUs or nodes the cause spans.
    exposure = models.PositiveIntegerField(default=1)
    # sha256 of the identity (check, cluster, subject, key; no tenant): the same cause never
    # makes a second finding.
    fingerprint = models.CharField(max_length=64, unique=True)
    title = models.CharField(max_length=300)
    evidence = models.JSONField(default=dict)
    # sha256 of the evidence as canonical JSON (sorted keys), written with it: a re-score
    # compares digests instead of decoding every stored evidence, and the actions' digest
    # (PostureRun.actions_digest) covers evidence without reading it. "" until first rewritten.
    evidence_digest = models.CharField(max_length=64, blank=True, default="")
    first_seen = models.DateTimeField()
    last_seen = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    accepted_reason = models.TextField(blank=True, max_length=2000)
    accepted_until = models.DateTimeField(null=True, blank=True)
    # When the risk was accepted: what was accepted is the evidence seen then, so a drift
    # finding listing a change detected later opens again (posture.finding_store). Null for
    # an acceptance made before it was recorded whose audit event did not say: kept as is.
    accepted_at = models.DateTimeField(null=True, blank=True)
    # What the acceptance of a bulletin exposure finding (STACK-001..003, -005) saw: its CVEs,
    # the fix per component, its severity (posture.rules.stack.accepted). A later bulletin
    # that lists more opens it again (posture.finding_store). Null for other checks.
    accepted_basis = models.JSONField(null=True, blank=True)
    # Triage, set by a security lead (posture.triage): where the fix is tracked and who owns it.
    ticket_url = models.URLField(max_length=500, blank=True, validators=[WEB_URL])
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects = FindingQuerySet.as_manager()
    # What may name another tenant (inventory.presenter hides it from tenant viewers): a
    # co-tenancy or drift finding is about a subject in, or pods of, another tenant.
    redacted_fields = {
        "tenants": Field.TENANTS,
        "subject_namespace": Field.NAMESPACE,
        "subject_name": Field.SUBJECT_NAME,
        "title": Field.TEXT,
        "evidence": Field.VALUE,
        "accepted_reason": Field.TYPED,
        "ticket_url": Field.TEXT,
    }

    class Meta:
        ordering = ["status", "check_id", "id"]
        indexes = [
            # The lists' order: a page is read from the index, not sorted from every finding.
            models.Index(fields=["status", "check_id", "id"], name="finding_list_order"),
            models.Index(fields=["cluster", "status"], name="finding_cluster_status"),
            # The overview counts open findings per tenant and severity over every link: read
            # from this index, not from the rows (on SQLite, pages of ~1 KB of evidence each,
            # 1.0 s -> 0.3 s over 742,000 links). With the expiry: an acceptance past it
            # counts as open (gpuposture.base.finding_status), read from here too.
            models.Index(
                fields=["id", "status", "severity", "accepted_until"],
                name="finding_status_severity",
            ),
        ]

    def __str__(self) -> str:
        # A cluster-scoped subject (a Node, a ClusterRole) has no namespace: no stray slash.
        where = f"{self.subject_namespace}/" if self.subject_namespace else ""
        return f"{self.check_id} {self.subject_kind} {where}{self.subject_name}"

    @property
    def effective_status(self) -> str:
        """The status as read now: an acceptance past its expiry reads "open" before the next
        evaluation reopens the row (gpuposture.base.finding_status)."""
        return finding_status.effective_status(self.status, self.accepted_until, timezone.now())

    @property
    def acceptance_expired(self) -> bool:
        """Accepted until a time now past, and not yet reopened by an evaluation."""
        return finding_status.acceptance_lapsed(self.status, self.accepted_until, timezone.now())

    @property
    def reopened_note(self) -> str:
        """Why an open finding's acceptance, not past its expiry nor withdrawn, no longer
        holds: its evidence lists a change detected after it was made, or more bulletin
        exposure than it saw (finding_store)."""
        if self.status != self.Status.OPEN or self.accepted_until is None:
            return ""
        if self.accepted_until <= timezone.now():
            return ""
        change = change_after(self.check_id, self.evidence, self.accepted_at)
        if change is not None:
            return f"reopened: a change after the acceptance (detected {change['detected_at']:.16})"
        more = exposure_beyond(self.accepted_basis, self.check_id, self.evidence, self.severity)
        return f"reopened: {BEYOND} ({more['change']})" if more else ""


class TenantLinkQuerySet(ScopedQuerySet):
    scope = Scope(paths=("tenant",))


class FindingTenant(models.Model):
    """A tenant a finding affects (and, where it differs from the finding's, its exposure)."""

    # No index of their own: the unique (finding, tenant) and findingtenant_tenant lead with
    # each, and a first score inserts hundreds of thousands of links.
    finding = models.ForeignKey(
        Finding, on_delete=models.CASCADE, related_name="tenant_links", db_index=False
    )
    tenant = models.ForeignKey(
        Tenant, on_delete=models.CASCADE, related_name="finding_links", db_index=False
    )
    # What the cause spans of this tenant's, where that is not the finding's whole exposure
    # (K8S-008's binding: a victim's own namespaces among those it reaches); null: the
    # finding's. The score, the actions and the finding's `risk` weigh the tenant by it.
    exposure = models.PositiveIntegerField(null=True, blank=True)

    objects = TenantLinkQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["finding", "tenant"], name="findingtenant_unique")
        ]
        # A tenant's findings (its page, its score, a viewer's list) start from the tenant.
        indexes = [models.Index(fields=["tenant", "finding"], name="findingtenant_tenant")]

    def __str__(self) -> str:
        return f"{self.finding_id} affects {self.tenant_id}"


class EarlierAcceptance(models.Model):
    """A risk accepted on a narrower finding of the same check that a new, wider finding spans
    (its subject widened: STACK-008's nodes now under their ClusterPolicy): carried to it when
    every subject it spans was accepted, else kept here as no longer applying, so nothing is
    lost without a word (posture.acceptance_carry). Also a finding's own acceptance that
    lapsed when it resolved and came back (`source` is the finding: posture.finding_return)."""

    finding = models.ForeignKey(
        Finding, on_delete=models.CASCADE, related_name="earlier_acceptances"
    )
    source = models.ForeignKey(
        Finding, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    subject = models.CharField(max_length=400)  # the narrower finding's, e.g. "Node gpu-3"
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reason = models.TextField(blank=True, max_length=2000)
    until = models.DateTimeField(null=True, blank=True)
    carried = models.BooleanField(default=False)  # True: part of the acceptance it carries
    # How many of the `of` subjects the finding spans these earlier acceptances covered.
    covers = models.PositiveIntegerField(default=1)
    of = models.PositiveIntegerField(default=1)
    recorded_at = models.DateTimeField()

    # The subject and the reason may name a tenant's namespace or workload.
    redacted_fields = {"subject": Field.TEXT, "reason": Field.TYPED}

    class Meta:
        ordering = ["finding", "until", "id"]

    def __str__(self) -> str:
        return f"{self.subject} accepted, now under finding {self.finding_id}"


class PostureRun(models.Model):
    """One evaluation of the checks and the scores."""

    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    clusters = models.JSONField(default=list, blank=True)
    counts = models.JSONField(default=dict, blank=True)
    # sha256 of everything the fix-first actions are grouped from (posture.action_store): the
    # next run regroups them only when it differs.
    actions_digest = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        ordering = ["-started_at", "-id"]

    def __str__(self) -> str:
        return f"posture run {self.pk} at {self.started_at:%Y-%m-%d %H:%M}"


class ClusterScoreState(models.Model):
    """When a cluster's findings were last scored, and whether a re-score is waiting."""

    cluster = models.OneToOneField(
        Cluster, primary_key=True, on_delete=models.CASCADE, related_name="score_state"
    )
    # Set by the first change of a debounce window (a conditional UPDATE, STYLE rule 4); the
    # re-score task clears it when it claims the work, so 50 changes make one re-score.
    pending_since = models.DateTimeField(null=True, blank=True)
    last_scored_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.cluster_id} scored {self.last_scored_at} pending {self.pending_since}"


class TenantScoreQuerySet(ScopedQuerySet):
    scope = Scope(paths=("tenant",))


class TenantScore(models.Model):
    """A tenant's risk points and score in one run, with the contributions that explain them."""

    run = models.ForeignKey(PostureRun, on_delete=models.CASCADE, related_name="scores")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="scores")
    computed_at = models.DateTimeField()
    # Risk points (DESIGN §6): what ranks tenants; the score is 100 x exp(-risk/K), as shown.
    risk = models.FloatField(default=0)
    score = models.FloatField()
    grade = models.CharField(max_length=1)
    cap = models.CharField(max_length=300, blank=True)
    contributions = models.JSONField(default=list)
    open_by_severity = models.JSONField(default=dict)

    objects = TenantScoreQuerySet.as_manager()

    class Meta:
        ordering = ["-computed_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "tenant"], name="tenantscore_unique_per_run"),
            models.CheckConstraint(
                condition=models.Q(score__lte=100), name="tenantscore_score_max_100"
            ),
        ]
        # Covering the pages' "latest score" subqueries: on SQLite risk and score sit after
        # the large contributions in the row, so reading them from the table walked its
        # overflow pages for every score of every tenant (posture/migrations/0012).
        indexes = [
            models.Index(
                fields=["tenant", "-computed_at", "-id", "risk", "score", "grade", "cap"],
                name="score_tenant_latest",
            )
        ]

    def __str__(self) -> str:
        return f"{self.tenant} {self.score} ({self.grade})"


class ActionQuerySet(ScopedQuerySet):
    # A tenant viewer sees the actions that remove risk of one of their tenants.
    scope = Scope(linked="tenants")


class Action(models.Model):
    """One change that closes a group of open findings (posture/actions.py), as of the last
    score: rewritten by a posture run when what they are grouped from changed (see
    PostureRun.actions_digest), ranked by the risk it removes."""

    key = models.CharField(max_length=16, unique=True)  # stable across runs
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="actions")
    title = models.CharField(max_length=400)
    severity = models.CharField(max_length=10, choices=Severity.choices)
    check_ids = models.JSONField(default=list)
    finding_ids = models.JSONField(default=list)
    finding_count = models.PositiveIntegerField(default=0)
    tenants = models.ManyToManyField(
        Tenant, through="ActionTenant", related_name="actions", blank=True
    )
    # Risk points its findings carry for the tenants they affect (what the scores lose).
    risk_removed = models.FloatField(default=0)
    share_of_risk = models.FloatField(default=0)  # percent of all open risk
    share_of_critical = models.FloatField(default=0)  # percent of all open critical risk
    computed_at = models.DateTimeField()

    objects = ActionQuerySet.as_manager()
    # The title names workloads, pools and, for a co-tenancy, both tenants.
    redacted_fields = {"tenants": Field.TENANTS, "title": Field.TEXT}

    class Meta:
        ordering = ["-risk_removed", "key"]
        indexes = [models.Index(fields=["-risk_removed", "key"], name="action_rank")]

    def __str__(self) -> str:
        return self.title


class ActionTenant(models.Model):
    """A tenant an action helps, with the risk points it removes for that tenant."""

    # No index of their own, as FindingTenant's.
    action = models.ForeignKey(
        Action, on_delete=models.CASCADE, related_name="tenant_links", db_index=False
    )
    tenant = models.ForeignKey(
        Tenant, on_delete=models.CASCADE, related_name="action_links", db_index=False
    )
    risk = models.FloatField(default=0)
    critical_risk = models.FloatField(default=0)  # the part of `risk` from critical findings

    objects = TenantLinkQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["action", "tenant"], name="actiontenant_unique")
        ]
        indexes = [models.Index(fields=["tenant", "action"], name="actiontenant_tenant")]

    def __str__(self) -> str:
        return f"{self.action_id} helps {self.tenant_id}"


class CheckExemptionQuerySet(ScopedQuerySet):
    scope = STAFF_ONLY


class CheckExemption(models.Model):
    """A platform component one check must not report (never a global switch-off): the
    subject is matched by namespace, kind, name and labels; empty fields match anything."""

    check_id = models.CharField(max_length=20, db_index=True)
    cluster = models.ForeignKey(
        Cluster, null=True, blank=True, on_delete=models.CASCADE, related_name="exemptions"
    )
    namespace = models.CharField(max_length=63, blank=True)
    kind = models.CharField(max_length=40, blank=True)
    name = models.CharField(max_length=320, blank=True)
    labels = models.JSONField(default=dict, blank=True)
    reason = models.TextField(max_length=2000)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = CheckExemptionQuerySet.as_manager()

    class Meta:
        ordering = ["check_id", "namespace", "kind", "name"]
        constraints = [
            # At least one resource field: an exemption never switches a check off globally.
            models.CheckConstraint(
                condition=~models.Q(namespace="", kind="", name="", labels={}),
                name="exemption_names_a_resource",
            )
        ]

    def __str__(self) -> str:
        return (
            f"{self.check_id} exempts {self.kind or '*'} {self.namespace or '*'}/{self.name or '*'}"
        )
