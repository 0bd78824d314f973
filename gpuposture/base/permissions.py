"""Project-wide API permissions: a role is needed; writes need the role the view names."""

from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS, BasePermission

from gpuposture.base.models import ApiToken
from gpuposture.base.roles import has_any_role, has_role, user_roles
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
        if getattr(view, request.method.lower(), None) is None:
            return True  # no such write here: DRF answers 405 with the methods there are
        write_roles = getattr(view, "write_roles", ())
        if has_role(request.user, *write_roles):
            return True
        # They have a role, only not this one: "you need a role" would send them to ask for
        # what they have. Say what the change needs.
        self.message = write_refusal(request.user, write_roles, request.method)
        return False


def write_refusal(user, write_roles: tuple[str, ...], method: str) -> str:
    """Why a user with a role may not make this change, and who may."""
    held = ", ".join(sorted(user_roles(user))) or "none"
    if not write_roles:
        return f"This endpoint is read-only: {method} changes nothing here (your roles: {held})."
    needed = " or ".join(sorted(write_roles))
    return (
        f"Your roles ({held}) may read this but not change it; {method} here needs "
        f"the role {needed}."
    )


class AnyRolePermission(BasePermission):
    """For endpoints that compute and store nothing (a POST only because the input is large):
    any user with a role may call them."""

    message = RoleReadPermission.message

    def has_permission(self, request, view) -> bool:
        return has_any_role(request.user)
