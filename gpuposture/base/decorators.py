"""Role checks for page views that change something (reads are scoped by visible_to)."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.core.exceptions import PermissionDenied

from gpuposture.base.roles import has_role


def role_required(*roles: str) -> Callable:
    def decorate(view: Callable) -> Callable:
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if not has_role(request.user, *roles):
                raise PermissionDenied(f"This needs the role {' or '.join(roles)}.")
            return view(request, *args, **kwargs)

        return wrapper

    return decorate
