"""Private by default: every page needs a login unless its view says otherwise."""

from __future__ import annotations

from django.contrib.auth.middleware import LoginRequiredMiddleware as DjangoLoginRequired


class LoginRequiredMiddleware(DjangoLoginRequired):
    """Django's login-required middleware, except for the API, where DRF's project-wide
    permission classes answer 401/403 in JSON (a token client cannot follow a login redirect)."""

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.path_info.startswith("/api/"):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)


class ApiNotFoundMiddleware:
    """A 404 page under /api/ becomes the API's JSON 404. Without DEBUG, handler404 does it
    (gpuposture.urls); with DEBUG (the demo), Django answers an unresolved path with its
    technical HTML page and never calls handler404, so the API contract's JSON errors would
    hold only in production. DRF's own 404s are JSON already and pass through untouched."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (
            response.status_code == 404
            and request.path_info.startswith("/api/")
            and response.get("Content-Type", "").startswith("text/html")
        ):
            # Imported here: gpuposture.base.api imports DRF, which reads the settings.
            from gpuposture.base.api import api_route_not_found

            return api_route_not_found(request)
        return response
