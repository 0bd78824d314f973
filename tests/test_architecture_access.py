"""The access rule lives in one place: every model that names a tenant declares its scope, every
scope leads where it says, and no queryset writes its own visible_to (gpuposture.base.querysets)."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.db import models

from gpuposture.base.querysets import Scope, ScopedQuerySet
from tenants.models import Tenant


def _names_a_tenant(model: type[models.Model]) -> bool:
    return model is Tenant or any(
        field.concrete
        and field.related_model is Tenant
        and (field.many_to_one or field.many_to_many)
        for field in model._meta.get_fields()
    )


def _scoped_models() -> list[type[models.Model]]:
    return [
        model
        for model in apps.get_models()
        if issubclass(model._default_manager._queryset_class, ScopedQuerySet)
    ]


def _scope(model: type[models.Model]) -> Scope | None:
    queryset_class = model._default_manager._queryset_class
    return getattr(queryset_class, "scope", None)


def _end_of(model: type[models.Model], path: str) -> type[models.Model]:
    for name in filter(None, path.split("__")):
        model = model._meta.get_field(name).related_model
    return model


def test_every_model_naming_a_tenant_declares_a_scope() -> None:
    undeclared = [
        model._meta.label
        for model in apps.get_models()
        if _names_a_tenant(model) and (model not in _scoped_models() or _scope(model) is None)
    ]
    assert not undeclared, (
        f"{undeclared} name a tenant but declare no scope: give each a ScopedQuerySet "
        "manager with `scope = Scope(...)` (gpuposture/base/querysets.py)"
    )


def test_no_scoped_model_leaves_its_scope_undeclared() -> None:
    undeclared = [model._meta.label for model in _scoped_models() if _scope(model) is None]
    assert not undeclared


@pytest.mark.parametrize("model", _scoped_models(), ids=lambda model: model._meta.label)
def test_each_scope_leads_where_it_says(model: type[models.Model]) -> None:
    scope = _scope(model)
    assert scope is not None
    for path in scope.paths:
        assert _end_of(model, path) is Tenant, f"{path!r} does not reach Tenant"
    if scope.linked:
        field = model._meta.get_field(scope.linked)
        assert field.many_to_many and field.related_model is Tenant
        assert field.remote_field.through is not None
    if scope.via:
        target = model._meta.get_field(scope.via).related_model
        assert issubclass(target._default_manager._queryset_class, ScopedQuerySet)
    if scope.owner:
        assert model._meta.get_field(scope.owner).related_model is get_user_model()


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def test_no_queryset_writes_its_own_visible_to() -> None:
    overriding = [
        cls.__qualname__ for cls in _subclasses(ScopedQuerySet) if "visible_to" in vars(cls)
    ]
    assert not overriding, f"{overriding}: declare a Scope instead of overriding visible_to"
