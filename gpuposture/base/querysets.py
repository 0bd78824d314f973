"""The one place that decides which rows a user may see (STYLE rule 7).

Every model a user reads declares its `Scope` once, as the `scope` of its queryset; the one
`visible_to(user)` below applies it. No model, view, API, export or chart narrows rows by role
itself: a new model declares a scope (tests/test_architecture_access.py fails otherwise)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce
from operator import or_

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import ImproperlyConfigured
from django.db import models
from django.db.models import Q

from gpuposture.base.roles import TENANT_VIEWER, has_any_role, reads_all_posture, user_roles

User = AbstractBaseUser | AnonymousUser


@dataclass(frozen=True)
class Scope:
    """Who sees which rows of one model.

    `readers` see every row. A tenant viewer sees the rows of the tenants they view, reached
    by one of:
      - `paths`: lookups from the model to Tenant ("tenant", "pods__tenant", "" for Tenant
        itself); several are OR-ed. They join through the tenant's viewers, hence DISTINCT.
      - `linked`: a many-to-many to Tenant with a through model, narrowed by EXISTS on the
        through rows (no join multiplies the rows, so no DISTINCT).
    `via`: a foreign key whose model's scope decides instead, for every user who is not a
    reader. `owner`: a foreign key to the user a row belongs to; each user sees their own
    rows and no one else's, whatever their roles. `shared`: a filter on the rows every
    signed-in holder of a role who is not a reader sees (bulletins marked TLP:CLEAR). A scope
    with none of these is for its readers only. `within`: with `via`, what narrows the rows
    further for every user who is not a reader (user -> Q): a cluster's drift events reach
    only some of its nodes."""

    paths: tuple[str, ...] = ()
    linked: str = ""
    via: str = ""
    owner: str = ""
    shared: Q | None = None
    within: Callable[[User], Q] | None = None
    readers: Callable[[User], bool] = reads_all_posture

    @property
    def tenant_viewers(self) -> bool:
        return bool(self.paths or self.linked)


# Rows for those who read the whole fleet's posture, never for a tenant viewer.
STAFF_ONLY = Scope()


class ScopedQuerySet(models.QuerySet):
    """A queryset with visible_to(user), driven by the `scope` its subclass declares."""

    scope: Scope | None = None

    def visible_to(self, user: User) -> models.QuerySet:
        scope = self._declared_scope()
        if scope.owner:
            return self.filter(**{scope.owner: user}) if user.is_authenticated else self.none()
        if scope.readers(user):
            return self
        if scope.shared is not None:
            return self.filter(scope.shared) if has_any_role(user) else self.none()
        if scope.via:
            target = self.model._meta.get_field(scope.via).related_model
            rows = self.filter(**{f"{scope.via}__in": target._default_manager.visible_to(user)})
            return rows.filter(scope.within(user)) if scope.within is not None else rows
        if scope.tenant_viewers and TENANT_VIEWER in user_roles(user):
            return self._viewed_by(scope, user)
        return self.none()

    def affecting(self, **lookup: object) -> models.QuerySet:
        """Rows linked (through the scope's `linked` many-to-many) to a tenant matching
        `lookup`, a lookup on the through model such as tenant=t or tenant__slug="alpha".

        `pk IN (links)`, not EXISTS: SQLite runs a correlated EXISTS once per row, so a
        tenant's page scanned every finding of the cluster (0.3 s at 344,000) where the IN
        reads the tenant's links from their index and looks each finding up (12 ms).
        PostgreSQL plans both as the same semi-join."""
        field = self.model._meta.get_field(self._declared_scope().linked)
        through = field.remote_field.through
        links = through._default_manager.filter(**lookup)
        return self.filter(pk__in=links.values(field.m2m_field_name()))

    def _viewed_by(self, scope: Scope, user: User) -> models.QuerySet:
        if scope.linked:
            field = self.model._meta.get_field(scope.linked)
            return self.affecting(**{f"{field.m2m_reverse_field_name()}__viewers": user})
        lookups = [Q(**{f"{path}__viewers" if path else "viewers": user}) for path in scope.paths]
        return self.filter(reduce(or_, lookups)).distinct()

    def _declared_scope(self) -> Scope:
        if self.scope is None:
            raise ImproperlyConfigured(f"{self.model.__name__}: its queryset declares no scope")
        return self.scope


def sees_every_row(user: User, model: type[models.Model]) -> bool:
    """True when visible_to(user) leaves `model` unnarrowed: for code that skips a filter (or
    a cache) rather than apply one that keeps every row."""
    scope = model._default_manager._queryset_class.scope
    return scope is not None and not scope.owner and scope.readers(user)
