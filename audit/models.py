"""The audit log: one append-only, hash-chained row per change of a tenant, trust class,
namespace or principal mapping, risk acceptance, cluster or provider (DESIGN §10)."""

from __future__ import annotations

from typing import Any, NoReturn

from django.conf import settings
from django.db import models

from audit.chain import EventContent, StoredEvent
from gpuposture.base.querysets import ScopedQuerySet
from gpuposture.base.roles import reads_audit_log


class AppendOnlyError(Exception):
    """Audit events are never changed or deleted."""


def _refuse(what: str) -> NoReturn:
    raise AppendOnlyError(f"audit events are append-only: {what} is refused")


class AuditEventQuerySet(ScopedQuerySet):
    """Only auditors and security leads (and superusers) see the log; nobody changes it through
    the ORM. (Django's cascade uses the plain base manager to null the actor of a deleted user:
    the one change allowed, and the PostgreSQL trigger allows only that too.)"""

    def visible_to(self, user):
        return self if reads_audit_log(user) else self.none()

    def update(self, **kwargs: Any) -> NoReturn:
        _refuse("update()")

    def delete(self) -> NoReturn:
        _refuse("delete()")

    def bulk_create(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse("bulk_create() (record events with audit.services.audit_record)")

    def bulk_update(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse("bulk_update()")


class AuditEvent(models.Model):
    """Who did what to which object, with the object before and after, chained by hash."""

    time = models.DateTimeField(db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Null for commands and tasks, or once the account is deleted.",
    )
    actor_name = models.CharField(
        max_length=150, help_text="The username, or the command (kept if the user is deleted)."
    )
    action = models.CharField(max_length=32, db_index=True)
    object_type = models.CharField(max_length=100, help_text="app_label.model, e.g. tenants.tenant")
    object_id = models.CharField(max_length=64, blank=True)
    object_repr = models.CharField(max_length=200, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    request_id = models.CharField(max_length=64, blank=True, db_index=True)
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["hash"], name="audit_event_unique_hash"),
            # Two events can never follow the same one: a forked chain cannot be committed.
            models.UniqueConstraint(fields=["prev_hash"], name="audit_event_unique_prev_hash"),
        ]
        indexes = [
            models.Index(fields=["object_type", "object_id"], name="audit_event_object"),
            models.Index(fields=["actor_name", "time"], name="audit_event_actor_time"),
        ]

    def __str__(self) -> str:
        return f"{self.actor_name} {self.action} {self.object_type} {self.object_repr}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding or self.pk is not None:
            _refuse("saving an existing event")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse("delete()")

    def content(self) -> EventContent:
        return EventContent(
            time=self.time,
            actor=self.actor_name,
            action=self.action,
            object_type=self.object_type,
            object_id=self.object_id,
            object_repr=self.object_repr,
            before=self.before,
            after=self.after,
            request_id=self.request_id,
        )

    def stored(self) -> StoredEvent:
        return StoredEvent(self.pk, self.content(), self.prev_hash, self.hash)
