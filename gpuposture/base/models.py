"""Models of the shared layer: personal API tokens (DESIGN §10: a token acts as its user)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class ApiTokenQuerySet(models.QuerySet):
    def active(self) -> ApiTokenQuerySet:
        """Tokens that still authenticate: not revoked, not expired."""
        return self.filter(revoked_at__isnull=True, expires_at__gt=timezone.now())


class ApiToken(models.Model):
    """A personal, named, scoped API token; only a hash of its secret is stored."""

    class Scope(models.TextChoices):
        READ = "read", "read-only"
        WRITE = "write", "read-write"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=80)
    # Random, not secret: shown in lists and logs so a person can tell their tokens apart.
    prefix = models.CharField(max_length=8, unique=True)
    # sha256 hex of the whole key; the key itself is shown once and never stored.
    key_hash = models.CharField(max_length=64, unique=True)
    scope = models.CharField(max_length=5, choices=Scope.choices, default=Scope.READ)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    last_used_ip = models.GenericIPAddressField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        verbose_name = "API token"
        ordering = ("-created_at", "-id")
        constraints = [
            # Revoked tokens keep their row (history); their names may be used again.
            models.UniqueConstraint(
                fields=["user", "name"],
                condition=Q(revoked_at__isnull=True),
                name="apitoken_name_unique_per_user",
            ),
            models.CheckConstraint(
                condition=Q(scope__in=["read", "write"]), name="apitoken_scope_valid"
            ),
            models.CheckConstraint(
                condition=Q(expires_at__gt=models.F("created_at")),
                name="apitoken_expires_after_creation",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None

    @property
    def is_expired(self) -> bool:
        return self.expires_at <= timezone.now()

    @property
    def is_active(self) -> bool:
        return not self.is_revoked and not self.is_expired

    @property
    def read_only(self) -> bool:
        return self.scope == self.Scope.READ
