"""The one place that decides which rows a user may see (STYLE rule 7)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import models

from gpuposture.base.roles import TENANT_VIEWER, reads_all_posture, user_roles


class ScopedQuerySet(models.QuerySet):
    """A queryset with visible_to(user). Subclasses say how a tenant viewer is narrowed by
    `tenant_scope_path`: the lookup from this model to the tenant (e.g. "tenant", or "" for
    the Tenant model itself). Models no tenant viewer may see set it to None."""

    tenant_scope_path: str | None = None

    def visible_to(self, user: AbstractBaseUser | AnonymousUser) -> models.QuerySet:
        if reads_all_posture(user):
            return self
        if TENANT_VIEWER in user_roles(user) and self.tenant_scope_path is not None:
            return self.viewed_by(user)
        return self.none()

    def viewed_by(self, user: AbstractBaseUser | AnonymousUser) -> models.QuerySet:
        """The rows of the tenants `user` views (called for tenant viewers only). A model
        reaching its tenants through a many-to-many relation may narrow by EXISTS instead."""
        prefix = f"{self.tenant_scope_path}__" if self.tenant_scope_path else ""
        return self.filter(**{f"{prefix}viewers": user}).distinct()
