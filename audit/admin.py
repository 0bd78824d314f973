"""The audit log in the admin (read only), and AuditedModelAdmin: admin changes as events."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.contrib import admin
from django.db import models, transaction
from django.http import HttpRequest

from audit.models import AuditEvent
from audit.services import CREATE, DELETE, audit_change, audit_record, model_to_audit_dict


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """Read only for everyone, superusers included: the log is changed by no one."""

    list_display = ("id", "time", "actor_name", "action", "object_type", "object_repr")
    list_filter = ("action", "object_type")
    search_fields = ("actor_name", "object_repr", "object_id", "request_id")
    readonly_fields = [f.name for f in AuditEvent._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class AuditedAdminMixin:
    """Records every add, change and delete made through this admin, inlines included, as an
    audit event by the admin user. Override `audit_state` to choose what before/after hold
    (never a secret), and `audit_cascades` to name the rows a delete takes with it.

    `creator_fields` name who-made-it fields (created_by, recorded_by...): never editable in the
    admin, set from the signed-in user when the row is added (a user for a foreign key, the
    username for text)."""

    creator_fields: tuple[str, ...] = ()

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = super().get_readonly_fields(request, obj)
        return (*fields, *(f for f in self.creator_fields if f not in fields))

    def audit_state(self, obj: models.Model) -> dict[str, Any]:
        return model_to_audit_dict(obj)

    def audit_cascades(self, obj: models.Model) -> Iterable[models.Model]:
        return ()

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        stored = type(obj)._base_manager.filter(pk=obj.pk).first() if change else None
        obj._audit_before = self.audit_state(stored) if stored is not None else None
        if not change:
            _stamp_creator(obj, self.creator_fields, request)
        super().save_model(request, obj, form, change)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, [], change)  # the form's many-to-many fields
        # Recorded here, not in save_model: the state includes many-to-many values.
        obj = form.instance
        if hasattr(obj, "_audit_before"):
            self._record_saved(request, obj, obj._audit_before)
            del obj._audit_before
        for formset in formsets:
            self.save_formset(request, form, formset, change=change)

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        # Deleted rows lose their pk: note each row's id and stored state first.
        ids = {id(f.instance): f.instance.pk for f in formset.initial_forms if f.instance.pk}
        before = {
            row.pk: self.audit_state(row)
            for row in formset.model._base_manager.filter(pk__in=ids.values())
        }
        super().save_formset(request, form, formset, change)
        for obj in formset.deleted_objects:
            pk = ids[id(obj)]
            self._record_deleted(request, obj, pk, before.get(pk))
        for obj, _fields in formset.changed_objects:
            self._record_saved(request, obj, before.get(obj.pk))
        for obj in formset.new_objects:
            self._record_saved(request, obj, None)

    @transaction.atomic
    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        doomed = self._doomed(obj)
        super().delete_model(request, obj)
        for row, pk, state in doomed:
            self._record_deleted(request, row, pk, state)

    @transaction.atomic
    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        doomed = [entry for obj in queryset for entry in self._doomed(obj)]
        super().delete_queryset(request, queryset)
        for row, pk, state in doomed:
            self._record_deleted(request, row, pk, state)

    def _doomed(self, obj: models.Model) -> list[tuple[models.Model, Any, dict[str, Any]]]:
        rows = [*self.audit_cascades(obj), obj]
        return [(row, row.pk, self.audit_state(row)) for row in rows]

    def _record_saved(self, request: HttpRequest, obj: Any, before: Any) -> None:
        after = self.audit_state(obj)
        if before is None:
            audit_record(actor=request.user, action=CREATE, obj=obj, after=after)
        else:
            audit_change(actor=request.user, obj=obj, before=before, after=after)

    def _record_deleted(self, request: HttpRequest, obj: Any, pk: Any, state: Any) -> None:
        audit_record(
            actor=request.user,
            action=DELETE,
            obj=obj,
            object_id=pk,
            object_repr=str(obj),
            before=state,
        )


class AuditedModelAdmin(AuditedAdminMixin, admin.ModelAdmin):
    """A ModelAdmin whose changes are audit events (see AuditedAdminMixin)."""


def admin_audited(
    model: type[models.Model],
    *,
    audit_state: Callable[[models.Model], dict[str, Any]],
    mixins: tuple[type, ...] = (),
    site: admin.AdminSite = admin.site,
) -> None:
    """Make the admin registered for `model` (another app's, e.g. Django's UserAdmin) record
    its changes, keeping everything else it does. Call it once every admin module has been
    imported (an AppConfig.ready after django.contrib.admin's), so the class it wraps is the
    one that ends up serving the model, whichever app registered it. `mixins` come first in
    the new class (for views of that admin's own that save outside save_model)."""
    if not site.is_registered(model):
        return  # not in the admin: nothing can change it there
    registered = type(site.get_model_admin(model))
    if issubclass(registered, AuditedAdminMixin):
        return
    audited = type(
        f"Audited{registered.__name__}",
        (*mixins, AuditedAdminMixin, registered),
        {"audit_state": lambda self, obj: audit_state(obj), "__module__": __name__},
    )
    site.unregister(model)
    site.register(model, audited)


def _stamp_creator(obj: models.Model, names: Iterable[str], request: HttpRequest) -> None:
    for name in names:
        field = obj._meta.get_field(name)
        user = request.user
        setattr(obj, name, user if field.is_relation else user.get_username()[:150])
