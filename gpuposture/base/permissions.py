"""Project-wide API permissions: a role is needed; writes need the role the view names."""

from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS, BasePermission

from gpuposture.base.models import ApiToken
from gpuposture.base.roles import has_any_role, has_role
from gpuposture.base.tokens import READ_ONLY_MESSAGE


class RoleReadPermission(BasePermission):
    """Authenticated users with at least one role may read; writes need `write_roles` on the
    view (none by default). What each role sees is narrowed by the queryset's visible_to()."""

    message = "You need a gpuposture role to use this endpoint; ask an administrator."

    def has_permission(self, request, view) -> bool:
        if not has_any_role(request.user):
            return False
        if request.method in SAFE_METHODS:
            return True
        if isinstance(request.auth, ApiToken) and request.auth.read_only:
            # DRF shows the permission's `message`: this refusal needs its own.
            self.message = READ_ONLY_MESSAGE
            return False
        write_roles = getattr(view, "write_roles", ())
        return has_role(request.user, *write_roles)


class AnyRolePermission(BasePermission):
    """For endpoints that compute and store nothing (a POST only because the input is large):
    any user with a role may call them."""

    message = RoleReadPermission.message

    def has_permission(self, request, view) -> bool:
        return has_any_role(request.user)
