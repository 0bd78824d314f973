"""Bulletin revisions held for confirmation (a revision that weakens a fix)."""

from __future__ import annotations

from django.db import models

from gpuposture.base.querysets import ScopedQuerySet
from gpuposture.base.roles import reads_all_posture


class BulletinRevisionQuerySet(ScopedQuerySet):
    def visible_to(self, user):
        # Like import records: sources may name internal mirrors.
        return self if reads_all_posture(user) else self.none()


class BulletinRevision(models.Model):
    """A newer revision of a bulletin that weakens a fix (a lower fixed version, a product,
    branch or CVE dropped), held instead of applied until a security lead confirms it (it then
    replaces the bulletin) or rejects it."""

    class Status(models.TextChoices):
        PENDING = "pending", "pending confirmation"
        CONFIRMED = "confirmed"
        REJECTED = "rejected"
        # The bulletin moved on (another revision applied, or it was deleted) before a decision.
        SUPERSEDED = "superseded"

    tracking_id = models.CharField(max_length=200, db_index=True)
    version = models.CharField(max_length=40)
    base_version = models.CharField(
        max_length=40, help_text="The bulletin's revision this one was compared with."
    )
    title = models.CharField(max_length=500, blank=True)
    document = models.JSONField(help_text="The CSAF document as received.")
    source = models.CharField(max_length=500, blank=True)
    changes = models.JSONField(default=dict, help_text="RevisionChanges, weakening included.")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    held_by = models.ForeignKey(
        "inventory.BulletinImport",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="held_revisions",
    )
    requested_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    decided_by = models.CharField(max_length=150, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_note = models.TextField(blank=True, max_length=2000)

    objects = BulletinRevisionQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # A feed polled every hour offers the same revision again: it is held once.
            models.UniqueConstraint(
                fields=["tracking_id", "version"],
                condition=models.Q(status="pending"),
                name="bulletin_revision_one_pending",
            )
        ]

    def __str__(self) -> str:
        return f"{self.tracking_id} v{self.version} ({self.status})"
