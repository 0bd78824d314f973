"""Single sign-on decisions, pure: which roles and tenants an IdP's claims grant, and whether
the IdP says it used more than one factor. No Django; tests are tables (STYLE rule 1)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# The roles of DESIGN §10 an IdP group may grant (never superuser or staff). Kept equal to
# gpuposture.base.roles.ROLES by a test: settings read this module before Django is loaded.
ASSIGNABLE_ROLES = frozenset(
    {"security_lead", "platform_engineer", "procurement", "auditor", "tenant_viewer"}
)
TENANT_VIEWER = "tenant_viewer"
# RFC 8176 `amr` values that mean more than a password: "mfa" itself, a one-time password, a
# hardware key. A bare "pwd" (or no claim at all) does not count.
MFA_AMR_VALUES = frozenset({"mfa", "otp", "hwk"})

GroupMap = dict[str, frozenset[str]]


class MappingError(ValueError):
    """A GPUPOSTURE_OIDC_*_MAP value that cannot be read."""


def parse_group_map(text: str | None, *, allowed: Iterable[str] | None = None) -> GroupMap:
    """`group=value` entries, separated by commas, or by semicolons when the group names hold
    commas (LDAP DNs: `cn=gpu-security,ou=groups,dc=example;...`). A group may appear more
    than once to grant several values. The value is what follows the last `=`."""
    if not text or not text.strip():
        return {}
    allowed_set = frozenset(allowed) if allowed is not None else None
    separator = ";" if ";" in text else ","
    mapping: dict[str, set[str]] = {}
    for raw in text.split(separator):
        entry = raw.strip()
        if not entry:
            continue
        group, eq, value = entry.rpartition("=")
        group, value = group.strip(), value.strip()
        if not eq or not group or not value:
            raise MappingError(f"{entry!r} is not `group=value`")
        if allowed_set is not None and value not in allowed_set:
            raise MappingError(
                f"{entry!r}: {value!r} is not one of {', '.join(sorted(allowed_set))}"
            )
        mapping.setdefault(group, set()).add(value)
    return {group: frozenset(values) for group, values in mapping.items()}


def claim_groups(claims: Mapping[str, object], claim: str) -> frozenset[str]:
    """The user's groups from a claim holding a list of names (or one name); anything else
    (missing, a number, a nested object) gives no groups rather than an error."""
    value = claims.get(claim)
    if isinstance(value, str):
        return frozenset({value})
    if isinstance(value, list | tuple):
        return frozenset(item for item in value if isinstance(item, str))
    return frozenset()


def mapped(groups: Iterable[str], mapping: GroupMap) -> frozenset[str]:
    """Every value the user's groups map to; unknown groups are ignored."""
    return frozenset(value for group in groups for value in mapping.get(group, ()))


@dataclass(frozen=True)
class SsoGrant:
    """What one sign-in grants: roles (exactly these when `roles_exact`, else added to what
    an admin gave), the tenants to view, and the tenants SSO manages (those the tenant map
    names: a user loses a managed tenant their groups no longer grant)."""

    roles: frozenset[str]
    roles_exact: bool
    tenants: frozenset[str]
    managed_tenants: frozenset[str]


def sso_grant(
    claims: Mapping[str, object],
    *,
    groups_claim: str,
    role_map: GroupMap,
    tenant_map: GroupMap,
) -> SsoGrant:
    """With a role map, roles are exactly the mapped ones (plus tenant_viewer when a tenant
    is granted); without one, roles stay as an admin set them and a granted tenant adds
    tenant_viewer."""
    groups = claim_groups(claims, groups_claim)
    tenants = mapped(groups, tenant_map)
    roles = mapped(groups, role_map) | ({TENANT_VIEWER} if tenants else frozenset())
    return SsoGrant(
        roles=roles,
        roles_exact=bool(role_map),
        tenants=tenants,
        managed_tenants=frozenset(v for values in tenant_map.values() for v in values),
    )


def oidc_claims(extra_data: Mapping[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(all claims, ID token claims) from what allauth stores of an OpenID Connect sign-in
    (`{"id_token": {...}, "userinfo": {...}}`): userinfo overrides the ID token where both say
    something; `amr` belongs to the ID token."""
    data = dict(extra_data or {})
    id_token, userinfo = data.get("id_token"), data.get("userinfo")
    if not isinstance(id_token, dict) and not isinstance(userinfo, dict):
        return data, data  # allauth before 65.11 stored the claims flat
    id_token = id_token if isinstance(id_token, dict) else {}
    userinfo = userinfo if isinstance(userinfo, dict) else {}
    return {**id_token, **userinfo}, dict(id_token)


def idp_used_mfa(claims: Mapping[str, object]) -> bool:
    """Whether the ID token's `amr` says the IdP checked more than a password."""
    amr = claims.get("amr")
    if isinstance(amr, str):
        amr = [amr]
    if not isinstance(amr, list | tuple):
        return False
    return any(isinstance(v, str) and v.lower() in MFA_AMR_VALUES for v in amr)
