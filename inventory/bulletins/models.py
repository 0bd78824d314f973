"""Bulletins, their fixes and their import records (registered through inventory/models.py)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from gpuposture.base.querysets import STAFF_ONLY, Scope, ScopedQuerySet
from inventory.bulletins.csaf.severity import rating
from inventory.patching.models import PatchSla

# TLP labels whose documents may be shown to anyone signed in (TLP 1.0 WHITE, 2.0 CLEAR).
PUBLIC_TLP = ("WHITE", "CLEAR")


class BulletinQuerySet(ScopedQuerySet):
    # Those who read the whole fleet's posture read every bulletin. Other roles (a tenant
    # viewer, procurement) read only bulletins marked TLP:CLEAR / WHITE: GREEN is for a
    # community a customer tenant is not part of, AMBER and RED for named recipients, and a
    # document that states no TLP is not assumed public (fail closed).
    scope = Scope(shared=Q(tlp__in=PUBLIC_TLP))


class Bulletin(models.Model):
    """A vendor security advisory imported from CSAF 2.0 (its latest revision)."""

    tracking_id = models.CharField(max_length=200, unique=True)
    title = models.CharField(max_length=500)
    category = models.CharField(max_length=60)
    version = models.CharField(max_length=40)
    initial_release_date = models.DateTimeField(null=True, blank=True)
    current_release_date = models.DateTimeField()
    aggregate_severity = models.CharField(max_length=40, blank=True)
    cves = models.JSONField(default=list, blank=True)
    unmatched = models.JSONField(default=list, blank=True)
    source = models.CharField(max_length=500, blank=True)
    # document.tracking.status: "final", or "interim" (published, expected to change: shown
    # as such). Drafts are refused at import.
    tracking_status = models.CharField(max_length=10, default="final")
    # document.distribution.tlp.label (upper case, no "TLP:"); "" when the document states none.
    tlp = models.CharField(max_length=20, blank=True)
    imported_at = models.DateTimeField(auto_now=True)

    objects = BulletinQuerySet.as_manager()

    class Meta:
        ordering = ["-current_release_date", "tracking_id"]

    def __str__(self) -> str:
        return f"{self.tracking_id} {self.title}"

    @property
    def severity_level(self) -> str:
        """The aggregate severity as our severity names ("CRITICAL" -> "critical", Red Hat's
        "Important" -> "high"), or ""."""
        level = rating(self.aggregate_severity) or ""
        return level if level in PatchSla.Severity.values else ""


# The columns that identify one fix row of a bulletin across its revisions.
FIX_IDENTITY = (
    "kind",
    "platform",
    "branch",
    "line",
    "host",
    "affected_op",
    "affected_version",
    "fixed_version",
)


class BulletinFix(models.Model):
    """One component's affected bound and fixed version in a bulletin, with its CVEs."""

    bulletin = models.ForeignKey(Bulletin, on_delete=models.CASCADE, related_name="fixes")
    kind = models.CharField(max_length=40)
    platform = models.CharField(max_length=20, blank=True)
    branch = models.CharField(max_length=20, blank=True)
    line = models.CharField(max_length=60, blank=True)
    host = models.CharField(max_length=120, blank=True)
    affected_op = models.CharField(max_length=2)
    affected_version = models.CharField(max_length=60)
    condition = models.TextField(blank=True)
    fixed_version = models.CharField(max_length=60, blank=True)
    cves = models.JSONField(default=list)
    max_cvss = models.FloatField(null=True, blank=True)
    severity = models.CharField(max_length=20, blank=True)
    warning = models.TextField(blank=True)
    # No fixed version and the vendor says why ("none_available: ...", "no_fix_planned: ...").
    no_fix = models.TextField(blank=True)
    # What the vendor says to do besides (or instead of) upgrading: [{"category", "details",
    # "url"}] (vendor_fix, mitigation, workaround, none_available, no_fix_planned).
    remedies = models.JSONField(default=list, blank=True)
    # When this fix was published (the patch SLA clock's start); null on rows stored before
    # it was recorded, which read the bulletin's current release date.
    released = models.DateTimeField(null=True, blank=True)

    objects = models.Manager()

    class Meta:
        ordering = ["bulletin_id", "kind", "branch", "id"]
        indexes = [models.Index(fields=["kind", "branch"], name="bulletinfix_kind_branch")]

    def __str__(self) -> str:
        return f"{self.kind} {self.branch} {self.affected_op} {self.affected_version}"


class BulletinImportQuerySet(ScopedQuerySet):
    # Sources may name internal mirrors: for those who read the whole fleet's posture.
    scope = STAFF_ONLY


class BulletinImport(models.Model):
    """One import of bulletins (files, uploads, URLs or provider feeds), a confirmed weakening
    revision or a deletion: who asked, what was asked, what changed (fixed versions before and
    after, products and CVEs added and dropped), what was held for confirmation, what was
    refused with the reason, and the findings the re-score after it resolved."""

    class Status(models.TextChoices):
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    class Action(models.TextChoices):
        IMPORT = "import"
        CONFIRM = "confirm", "confirm a weakening revision"
        DELETE = "delete"

    action = models.CharField(max_length=10, choices=Action.choices, default=Action.IMPORT)
    trigger = models.CharField(max_length=20)  # cli, api, page, schedule, demo
    requested_by = models.CharField(max_length=150, blank=True)
    sources = models.JSONField(default=list)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)
    counts = models.JSONField(default=dict, blank=True)
    # Tracking ids imported, replaced or deleted: the bulletins whose change can move findings.
    bulletins = models.JSONField(default=list, blank=True)
    # Per bulletin: {"tracking_id", "outcome", "version_before", "version_after", and the
    # changes of inventory.bulletins.csaf.revisions.RevisionChanges}.
    changes = models.JSONField(default=list, blank=True)
    refused = models.JSONField(default=list, blank=True)  # [{"source", "reason"}]
    # {"count", "ids", "posture_run"} from the first full evaluation after the import
    # (posture.bulletin_effects); null until it has run.
    resolved_findings = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = BulletinImportQuerySet.as_manager()

    class Meta:
        ordering = ["-started_at", "-id"]

    def __str__(self) -> str:
        return f"bulletin {self.action} {self.pk} ({self.status})"
