"""The shared API layer: JSON errors and the scoped base viewsets."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import exceptions, viewsets
from rest_framework.response import Response
from rest_framework.views import exception_handler


def json_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Every API error is JSON with a `detail` a person can act on."""
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(
            exc.message_dict if hasattr(exc, "error_dict") else exc.messages
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound("No such object, or you may not see it.")
    response = exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(response.data, dict) and "detail" in response.data:
        return response
    # Field validation errors: keep the per-field messages and add one summary line.
    response.data = {"detail": "The request is not valid; see `errors`.", "errors": response.data}
    return response


class NameOrIdLookupMixin:
    """A detail route that names its object by `lookup_field` (a cluster's name) or by its id:
    DESIGN §8 writes `clusters/{id}/sync/` and `clusters/{name}/policy-pack/`, and a script
    holds whichever the list gave it. The name is tried first, so a name of digits still
    reaches its own object."""

    def get_object(self):
        value = str(self.kwargs[self.lookup_url_kwarg or self.lookup_field])
        queryset = self.filter_queryset(self.get_queryset())
        found = queryset.filter(**{self.lookup_field: value}).first()
        if found is None and value.isdigit():
            found = queryset.filter(pk=int(value)).first()
        if found is None:
            raise Http404
        self.check_object_permissions(self.request, found)
        return found


class ScopedViewSetMixin:
    """Applies the model queryset's visible_to(user) to every list, detail and action, so no
    endpoint can forget to scope (STYLE rule 7). Writes need a role in `write_roles`."""

    write_roles: tuple[str, ...] = ()

    def get_queryset(self):
        queryset = super().get_queryset()
        return queryset.visible_to(self.request.user)


class ScopedReadOnlyViewSet(ScopedViewSetMixin, viewsets.ReadOnlyModelViewSet):
    pass
