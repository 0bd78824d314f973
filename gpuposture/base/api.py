"""The shared API layer: JSON errors and the scoped base viewsets."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import exceptions, viewsets
from rest_framework.response import Response
from rest_framework.views import exception_handler

from gpuposture.base.parsers import MAX_BODY_BYTES


def json_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Every API error is JSON with a `detail` a person can act on."""
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(
            exc.message_dict if hasattr(exc, "error_dict") else exc.messages
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound("No such object, or you may not see it.")
    if isinstance(exc, RequestDataTooBig):
        exc = exceptions.ParseError(body_too_big_message())
    response = exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(response.data, dict) and "detail" in response.data:
        return response
    # Field validation errors: keep the per-field messages and add one summary line.
    response.data = {"detail": "The request is not valid; see `errors`.", "errors": response.data}
    return response


def body_too_big_message() -> str:
    return (
        f"The request body is larger than {MAX_BODY_BYTES // (1024 * 1024)} MiB, the most the "
        "API takes; send less at once (e.g. fewer answers or tenants per request)."
    )


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


def _api(request: HttpRequest) -> bool:
    return request.path_info.startswith("/api/")


def api_route_not_found(request: HttpRequest) -> JsonResponse:
    """An /api/v1/ path that names no resource: JSON, like every other API answer."""
    return JsonResponse(
        {
            "detail": f"No API resource at {request.path_info}; "
            "GET /api/v1/ lists the resources, /api/docs/ describes them."
        },
        status=404,
    )


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler404: JSON under /api/ (a client parses the answer), the page elsewhere."""
    if _api(request):
        return api_route_not_found(request)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: JSON under /api/, with the request id the server log has the details under."""
    if _api(request):
        request_id = getattr(request, "request_id", None)
        where = f" under request id {request_id}" if request_id else ""
        return JsonResponse(
            {"detail": f"Internal error; the server log has the details{where}."}, status=500
        )
    return defaults.server_error(request)
