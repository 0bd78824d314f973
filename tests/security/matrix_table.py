"""The permission matrix (DESIGN §10, STYLE rules 7 and 10): one row per URL name, saying who
may read it and who may write through it. tests/security/test_matrix.py walks the URL
resolver and fails for any URL that has no row here, so a new page or endpoint is classified
before it ships.

Personas: `anonymous`, `no_role` (logged in, no gpuposture role), one per role, OWNER (the
tenant viewer of alpha, whose objects fill the URLs) and OUTSIDER (the tenant viewer of
gamma: a tenant viewer of another tenant)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

LEAD, PLAT, PROC, AUD = "security_lead", "platform_engineer", "procurement", "auditor"
OWNER, OUTSIDER = "viewer_alpha", "viewer_gamma"
ROLE_PERSONAS = (LEAD, PLAT, PROC, AUD, OWNER, OUTSIDER)
PERSONAS = ("anonymous", "no_role", *ROLE_PERSONAS)

ANY_ROLE = frozenset(ROLE_PERSONAS)
# Everything read (DESIGN §10): security leads, platform engineers, auditors.
POSTURE = frozenset({LEAD, PLAT, AUD})
# A tenant's object: the posture readers and the tenant's own viewer.
TENANT = POSTURE | {OWNER}
PROVIDERS = POSTURE | {PROC}
NOBODY: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Access:
    """Who may do what through one URL.

    kind: "page" (login redirect for anonymous visitors), "api" (401/403), "public" (no login),
      "allauth" (django-allauth's own account pages), "metrics" (bearer token of its own).
    read: personas answered 200 on GET (with `obj` filled in: alpha's object). The other role
      personas get `denied` (403 for a role the URL needs, 404 for an object they may not see).
      A list every role reads is narrowed for tenant viewers by visible_to; the sweep in
      test_matrix.py checks that narrowing.
    get: False for POST-only URLs (GET answers 405, or 403/404 first for those refused).
    writes: method -> personas that get past the permission checks (an empty body then
      answers 400, or a page form with its errors); everyone else gets 403, 404 or 405.
    obj: the world object whose parameters fill the URL (tests/security/matrix_world.py).
    query: a query string a GET needs.
    """

    kind: str
    read: frozenset[str] = ANY_ROLE
    denied: int = 404
    get: bool = True
    writes: Mapping[str, frozenset[str]] = field(default_factory=lambda: MappingProxyType({}))
    obj: str | None = None
    query: str = ""
    note: str = ""


def page(**kw) -> Access:
    return Access(kind="page", **kw)


def api(**kw) -> Access:
    return Access(kind="api", **kw)


def post(*personas: frozenset[str] | str) -> Mapping[str, frozenset[str]]:
    return {"POST": _merge(personas)}


def _merge(parts) -> frozenset[str]:
    out: set[str] = set()
    for p in parts:
        out |= {p} if isinstance(p, str) else set(p)
    return frozenset(out)


ROLE_GATED = 403  # role_required / a write_roles check answers before any object lookup

PAGES: dict[str, Access] = {
    "overview": page(),
    # Each role's home (posture.homes): every role lands somewhere, scoped as the pages it shows.
    "home": page(),
    "tenant-list": page(),
    "tenant-detail": page(read=TENANT, obj="tenant_slug"),
    "finding-list": page(),
    "finding-detail": page(read=TENANT, obj="finding"),
    "finding-accept": page(get=False, obj="finding", writes=post(LEAD), denied=ROLE_GATED),
    "finding-reopen": page(get=False, obj="finding", writes=post(LEAD), denied=ROLE_GATED),
    "finding-triage": page(get=False, obj="finding", writes=post(LEAD), denied=ROLE_GATED),
    "finding-bulk-accept": page(get=False, writes=post(LEAD), denied=ROLE_GATED),
    "check-list": page(),
    "check-frameworks": page(),
    # The catalogue is public knowledge; its open-finding counts are scoped.
    "check-detail": page(obj="check_page"),
    "cluster-list": page(),
    "cluster-create": page(read={PLAT}, denied=ROLE_GATED, writes=post(PLAT)),
    "cluster-detail": page(read=TENANT, obj="cluster"),
    "cluster-edit": page(read={PLAT}, denied=ROLE_GATED, obj="cluster", writes=post(PLAT)),
    "cluster-sync": page(get=False, obj="cluster", writes=post(PLAT), denied=ROLE_GATED),
    "cluster-vex": page(read=TENANT, obj="cluster"),
    "node-list": page(),
    "node-detail": page(read=TENANT, obj="node_page"),
    "patch-status": page(),
    "patch-sla": page(read={LEAD}, denied=ROLE_GATED, writes=post(LEAD)),
    "mig-partitioner": page(),
    # Tenant viewers see the preview of their own namespaces; the pack itself is for readers
    # of every tenant (checked in tests/enforcement/test_pages.py).
    "enforcement": page(),
    "utilisation": page(),
    "utilisation-csv": page(),
    "reset-create": page(read={PLAT, LEAD}, denied=ROLE_GATED, writes=post(PLAT, LEAD)),
    "sharing-request-list": page(),
    # The form offers only the tenants the user may ask for (all for platform engineers,
    # their own for tenant viewers); the service refuses anything else.
    "sharing-request-new": page(writes=post(ANY_ROLE)),
    "sharing-request-detail": page(read=TENANT, obj="sharing_request"),
    # Whoever sees the request reaches the form; the service decides (four eyes, roles:
    # tests/tenants/test_sharing_requests.py) and says why in a message.
    "sharing-request-decide": page(get=False, obj="sharing_request", writes=post(TENANT)),
    "approvals-queue": page(),
    "provider-list": page(),
    "provider-create": page(read={PROC}, denied=ROLE_GATED, writes=post(PROC)),
    "provider-compare": page(read=PROVIDERS, denied=ROLE_GATED),
    # A tenant viewer sees the providers hosting their clusters (the standing, not answers).
    "provider-detail": page(read=PROVIDERS | {OWNER}, obj="provider"),
    "provider-edit": page(read={PROC}, denied=ROLE_GATED, obj="provider", writes=post(PROC)),
    # The service refuses all but procurement, with a message on the provider page.
    "assessment-new": page(get=False, obj="provider", writes=post(PROVIDERS | {OWNER})),
    "assessment-detail": page(read=PROVIDERS, obj="assessment"),
    # Saving, submitting, reviewing, importing: the services check the role (tests/providers).
    "assessment-save": page(get=False, obj="assessment", writes=post(PROVIDERS)),
    "assessment-submit": page(get=False, obj="assessment", writes=post(PROVIDERS)),
    "assessment-review": page(get=False, obj="assessment", writes=post(PROVIDERS)),
    "assessment-print": page(read=PROVIDERS, obj="assessment"),
    "assessment-download": page(read=PROVIDERS, obj="assessment_download"),
    "assessment-import": page(get=False, obj="assessment", writes=post(PROVIDERS)),
    "evidence-download": page(read=PROVIDERS, obj="evidence"),
    "evidence-remove": page(get=False, obj="evidence", writes=post(PROC), denied=ROLE_GATED),
    "bulletin-list": page(),
    "bulletin-import": page(read={LEAD, PLAT}, denied=ROLE_GATED, writes=post(LEAD, PLAT)),
    "bulletin-detail": page(obj="bulletin"),
    # A security lead's decisions (issue 16 item 5); held revisions are for posture readers.
    "bulletin-delete": page(get=False, obj="bulletin", writes=post(LEAD), denied=ROLE_GATED),
    "bulletin-revision": page(read=POSTURE, obj="bulletin_revision"),
    "bulletin-revision-decide": page(
        get=False, obj="bulletin_revision", writes=post(LEAD), denied=ROLE_GATED
    ),
    "audit-log": page(read={LEAD, AUD}, denied=ROLE_GATED),
    # API tokens: every user with a role manages their own; another user's token is a 404.
    "token-list": page(writes=post(ANY_ROLE)),
    "token-revoke": page(get=False, obj="token", writes=post(OWNER)),
    # Notifications: every user with a role keeps their own settings; another user's
    # subscription is a 404 (the subscription belongs to viewer_alpha).
    "notification-settings": page(writes=post(ANY_ROLE)),
    "notification-subscription-delete": page(
        get=False, obj="notification_subscription", writes=post(OWNER)
    ),
}

API: dict[str, Access] = {
    "api:api-root": api(),
    "api:api-patch-sla": api(writes={"PATCH": frozenset({LEAD})}),
    "api:api-utilisation": api(),
    # Computes a layout from the body and stores nothing: any role may call it.
    "api:api-mig-validate": api(get=False, writes=post(ANY_ROLE)),
    "api:api-mig-node-layout": api(read=TENANT, query="mig_node_own"),
    "api:cluster-checklist": api(read=TENANT, obj="cluster"),
    "api:cluster-vex": api(read=TENANT, obj="cluster"),
    # A pack names every tenant's namespaces and principals: readers of everything only.
    "api:cluster-policy-pack": api(read=POSTURE, obj="cluster", denied=ROLE_GATED),
    "api:cluster-policy-pack-preview": api(read=TENANT, obj="cluster"),
    "api:trustclass-list": api(),
    # Edited by a security lead (DESIGN §3, §6): PATCH only, never replaced or deleted.
    "api:trustclass-detail": api(obj="trust_class", writes={"PATCH": frozenset({LEAD})}),
    "api:tenant-list": api(writes=post(LEAD)),  # declare tenants (the tenants file shape)
    # Updated in the tenants file's shape, by whoever declares tenants (POST on the list).
    "api:tenant-detail": api(
        read=TENANT, obj="tenant", writes={"PUT": frozenset({LEAD}), "PATCH": frozenset({LEAD})}
    ),
    "api:tenant-posture": api(read=TENANT, obj="tenant"),
    "api:cluster-list": api(writes=post(PLAT)),
    "api:cluster-detail": api(
        read=TENANT, obj="cluster", writes={"PUT": frozenset({PLAT}), "PATCH": frozenset({PLAT})}
    ),
    "api:cluster-sync": api(get=False, obj="cluster", writes=post(PLAT)),
    "api:syncrun-list": api(),
    "api:syncrun-detail": api(read=TENANT, obj="sync_run"),
    "api:driftevent-list": api(),
    "api:driftevent-detail": api(read=TENANT, obj="drift_event"),
    "api:bulletin-list": api(writes=post(LEAD, PLAT)),
    "api:bulletin-detail": api(obj="bulletin", writes={"DELETE": frozenset({LEAD})}),
    "api:bulletinimport-list": api(),
    "api:bulletinimport-detail": api(read=POSTURE, obj="bulletin_import"),
    "api:bulletinrevision-list": api(),
    "api:bulletinrevision-detail": api(read=POSTURE, obj="bulletin_revision"),
    "api:bulletinrevision-confirm": api(
        get=False, obj="bulletin_revision", writes=post(LEAD), denied=ROLE_GATED
    ),
    "api:bulletinrevision-reject": api(
        get=False, obj="bulletin_revision", writes=post(LEAD), denied=ROLE_GATED
    ),
    "api:node-list": api(),
    "api:gpu-list": api(),
    "api:node-detail": api(read=TENANT, obj="node"),
    "api:pod-list": api(),
    "api:pod-detail": api(read=TENANT, obj="pod"),
    "api:finding-list": api(),
    "api:finding-export": api(query="?format=csv"),
    "api:finding-detail": api(read=TENANT, obj="finding"),
    "api:finding-accept": api(get=False, obj="finding", writes=post(LEAD), denied=ROLE_GATED),
    "api:finding-reopen": api(get=False, obj="finding", writes=post(LEAD), denied=ROLE_GATED),
    "api:action-list": api(),
    "api:action-detail": api(read=TENANT, obj="action"),
    "api:check-list": api(),
    "api:check-frameworks": api(),
    "api:check-detail": api(obj="check"),
    "api:resetattestation-list": api(writes=post(PLAT, LEAD)),
    "api:resetattestation-detail": api(read=TENANT, obj="reset"),
    "api:auditevent-list": api(read={LEAD, AUD}, denied=ROLE_GATED),
    "api:auditevent-detail": api(read={LEAD, AUD}, denied=ROLE_GATED, obj="audit_event"),
    # Tenant viewers ask for their own tenants (the serializer offers only those).
    "api:sharingrequest-list": api(writes=post(PLAT, OWNER, OUTSIDER)),
    "api:sharingrequest-detail": api(read=TENANT, obj="sharing_request"),
    "api:sharingrequest-approve": api(get=False, obj="sharing_request", writes=post(PLAT)),
    "api:sharingrequest-deny": api(get=False, obj="sharing_request", writes=post(PLAT)),
    "api:sharingrequest-revoke": api(get=False, obj="sharing_request", writes=post(PLAT, LEAD)),
    "api:provider-list": api(writes=post(PROC)),
    "api:provider-detail": api(
        read=PROVIDERS | {OWNER},
        obj="provider",
        writes={"PUT": frozenset({PROC}), "PATCH": frozenset({PROC})},
    ),
    "api:questionnaire-list": api(),
    "api:questionnaire-detail": api(read=PROVIDERS, obj="questionnaire"),
    "api:assessment-list": api(writes=post(PROC)),
    "api:assessment-detail": api(read=PROVIDERS, obj="assessment"),
    "api:assessment-answers": api(
        get=False,
        obj="assessment",
        writes={"POST": frozenset({PROC}), "PATCH": frozenset({PROC})},
    ),
    "api:assessment-export": api(read=PROVIDERS, obj="assessment"),
    "api:assessment-import-csv": api(get=False, obj="assessment", writes=post(PROC)),
    "api:assessment-review": api(get=False, obj="assessment", writes=post(LEAD)),
    "api:assessment-submit": api(get=False, obj="assessment", writes=post(PROC)),
    # The OpenAPI schema and its Swagger UI: any role (they describe, they hold no data).
    "schema": api(),
    "swagger-ui": api(),
}

PUBLIC: dict[str, Access] = {
    "healthz": Access(kind="public"),
    "readyz": Access(kind="public"),
    # Prometheus scrapes with its own bearer token (GPUPOSTURE_METRICS_TOKEN): 404 while none
    # is configured, 401 without the right one; sessions and roles play no part.
    "metrics": Access(kind="metrics"),
}

# django-allauth's account pages: login and password reset answer anonymous visitors; the
# rest are the signed-in user's own account (and MFA) settings.
ALLAUTH_NAMES = (
    "account_login",
    "account_logout",
    "account_inactive",
    "account_signup",
    "account_reauthenticate",
    "account_request_reauthentication_code",
    "account_confirm_reauthentication_code",
    "account_email",
    "account_email_verification_sent",
    "account_change_password",
    "account_set_password",
    "account_reset_password",
    "account_confirm_login_code",
    "account_confirm_email",
    "account_reset_password_from_key_done",
    "account_reset_password_from_key",
    "account_reset_password_done",
    "mfa_index",
    "mfa_authenticate",
    "mfa_reauthenticate",
    "mfa_activate_totp",
    "mfa_deactivate_totp",
    "mfa_view_recovery_codes",
    "mfa_generate_recovery_codes",
    "mfa_download_recovery_codes",
    "mfa_add_webauthn",
    "mfa_edit_webauthn",
    "mfa_list_webauthn",
    "mfa_reauthenticate_webauthn",
    "mfa_remove_webauthn",
    # Single sign-on (allauth.socialaccount, OpenID Connect) and its old unnamed redirects.
    "socialaccount_login_cancelled",
    "socialaccount_login_error",
    "socialaccount_signup",
    "socialaccount_connections",
    "openid_connect_login",
    "openid_connect_callback",
    "accounts/social/login/cancelled/",
    "accounts/social/login/error/",
    "accounts/social/signup/",
    "accounts/social/connections/",
)
ALLAUTH = {name: Access(kind="allauth") for name in ALLAUTH_NAMES}

# Django's admin (namespace "admin"): staff only, by the admin's own checks; no gpuposture
# role makes a user staff. Covered as one class: every admin URL, whatever models register.
ADMIN_NAMESPACE = "admin"

TABLE: dict[str, Access] = {**PAGES, **API, **PUBLIC, **ALLAUTH}
