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
