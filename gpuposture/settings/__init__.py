"""Settings for gpuposture, all from the environment (DESIGN §11)."""

from __future__ import annotations

import re
import secrets
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from gpuposture.base.sso_claims import ASSIGNABLE_ROLES, MappingError, parse_group_map
from gpuposture.settings.env import env_bool, env_int, env_list, env_secret, env_str
from gpuposture.settings.keys import mfa_encryption_key

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = BASE_DIR / "var"

DEBUG = env_bool("DEBUG", False)


def _secret_key() -> str:
    key = env_secret("SECRET_KEY")
    if key:
        return key
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Set SECRET_KEY (or SECRET_KEY_FILE), or DEBUG=1 for a "
            "development key kept in var/secret_key."
        )
    # Development only: one random key per checkout, outside the repository's tracked files.
    VAR_DIR.mkdir(exist_ok=True)
    key_file = VAR_DIR / "secret_key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(50))
        key_file.chmod(0o600)
    return key_file.read_text().strip()


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "allauth",
    "allauth.account",
    "allauth.mfa",
    "allauth.socialaccount",
    "allauth.socialaccount.providers.openid_connect",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "csp",
    "gpuposture.base",
    "audit",
    "tenants",
    "providers",
    "accounts",
    "inventory",
    "partitioner",
    "telemetry",
    "posture",
    "notifications",
    "enforcement",
    "sharing",
    "demo",
]

MIDDLEWARE = [
    # First, so a request's latency covers every other middleware.
    "gpuposture.base.metrics.RequestMetricsMiddleware",
    "gpuposture.base.request_id.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "gpuposture.base.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    # After the messages and allauth middleware: both may send the user elsewhere with a note.
    "gpuposture.base.sessions.SessionExpiryMiddleware",
    "gpuposture.base.mfa.MfaRequiredMiddleware",
]

ROOT_URLCONF = "gpuposture.urls"
WSGI_APPLICATION = "gpuposture.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "gpuposture.base.context.navigation",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env_secret("DATABASE_URL", f"sqlite:///{VAR_DIR / 'gpuposture.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
        # A kept connection is checked before each request or task reuses it, so a restarted
        # PostgreSQL costs no failed request (tests/faults/test_postgres_restart.py).
        conn_health_checks=env_bool("DATABASE_CONN_HEALTH_CHECKS", True),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A file, not memory, so a real Celery worker process in the tests sees the test data.
    DATABASES["default"]["TEST"] = {
        "NAME": env_str("SQLITE_TEST_NAME", str(VAR_DIR / "test.sqlite3"))
    }
    # IMMEDIATE: a write transaction takes the lock when it begins, so two writers queue
    # instead of one failing mid-way (the audit chain appends under concurrent requests).
    DATABASES["default"]["OPTIONS"] = {"timeout": 20, "transaction_mode": "IMMEDIATE"}
    DATABASES["default"]["CONN_MAX_AGE"] = 0
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": env_int("GPUPOSTURE_PASSWORD_MIN_LENGTH", 12)},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]

LANGUAGE_CODE = "en-gb"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = True
# Uploaded evidence lives outside the web root and has no URL of its own: a view serves each
# file only to users who may see its provider (providers.views).
MEDIA_ROOT = env_str("GPUPOSTURE_UPLOAD_DIR", str(VAR_DIR / "uploads"))
GPUPOSTURE_MAX_UPLOAD_BYTES = env_int("GPUPOSTURE_MAX_UPLOAD_BYTES", 10 * 1024 * 1024)
# Accepted assessments of a provider last this long; a reminder shows this many days before.
GPUPOSTURE_ASSESSMENT_VALID_DAYS = env_int("GPUPOSTURE_ASSESSMENT_VALID_DAYS", 365)
GPUPOSTURE_ASSESSMENT_REMINDER_DAYS = env_int("GPUPOSTURE_ASSESSMENT_REMINDER_DAYS", 30)

# --- authentication (django-allauth) -----------------------------------------------------------
LOGIN_URL = "account_login"
# Each role lands on its own home (posture.homes): the first page of its day.
LOGIN_REDIRECT_URL = "home"
ACCOUNT_LOGOUT_REDIRECT_URL = "account_login"
ACCOUNT_LOGIN_METHODS = {"username"}
ACCOUNT_SIGNUP_FIELDS = ["username*", "password1*", "password2*"]
ACCOUNT_EMAIL_VERIFICATION = "none"
ACCOUNT_ADAPTER = "gpuposture.base.auth.NoSignupAccountAdapter"
# Failed logins (and wrong two-factor codes): 10 a minute per address, 5 per 5 minutes per
# account. Counted in the cache: set CACHE_URL (Redis) when several processes serve requests.
ACCOUNT_RATE_LIMITS = {"login_failed": "10/m/ip,5/5m/key"}
ACCOUNT_SESSION_REMEMBER = False  # no "remember me": the session ends with the browser
# A session ends SESSION_COOKIE_AGE after sign-in (8 h), or after GPUPOSTURE_SESSION_IDLE_MINUTES
# without a request (30; 0 turns the idle limit off): gpuposture.base.sessions.
SESSION_COOKIE_AGE = env_int("SESSION_COOKIE_AGE", 8 * 3600)
SESSION_EXPIRE_AT_BROWSER_CLOSE = True
GPUPOSTURE_SESSION_IDLE_MINUTES = env_int("GPUPOSTURE_SESSION_IDLE_MINUTES", 30)
_cache_url = env_str("CACHE_URL")
# The overview and the findings API for readers of every tenant are cached per posture version
# (posture/read_cache.py); this bounds how long an edit that bypasses the audit log (a
# Django shell, an admin page that records no event) takes to show. 0: never cached.
GPUPOSTURE_READ_CACHE_SECONDS = env_int("GPUPOSTURE_READ_CACHE_SECONDS", 300)
# The most findings one export may hold (posture/api.py streams them, ~50,000 in a few
# seconds); a larger one is refused with a message asking to filter.
GPUPOSTURE_EXPORT_MAX_ROWS = env_int("GPUPOSTURE_EXPORT_MAX_ROWS", 100_000)
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _cache_url}
    if _cache_url
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
}

# Two-factor authentication: TOTP apps and security keys (WebAuthn), with recovery codes.
# Users holding these roles ("superuser" for superusers) must set one up before anything else
# (gpuposture.base.mfa); everyone else may.
GPUPOSTURE_MFA_REQUIRED_ROLES = env_list(
    "GPUPOSTURE_MFA_REQUIRED_ROLES", ["security_lead", "platform_engineer", "superuser"]
)
MFA_SUPPORTED_TYPES = ["totp", "webauthn", "recovery_codes"]
MFA_TOTP_ISSUER = "gpuposture"
MFA_TOTP_TOLERANCE = 1  # accept the previous and next 30 s code too (clock drift, slow typing)
# WebAuthn needs https, except on http://localhost in development.
MFA_WEBAUTHN_ALLOW_INSECURE_ORIGIN = DEBUG


# Two-factor secrets are encrypted in the database with this key (gpuposture.base.mfa_secrets).
GPUPOSTURE_MFA_ENCRYPTION_KEY = mfa_encryption_key(debug=DEBUG, secret_key=SECRET_KEY)
MFA_ADAPTER = "gpuposture.base.mfa_secrets.EncryptingMfaAdapter"

# Single sign-on (OpenID Connect); no issuer, no SSO button. Redirect URI to register at the IdP:
# https://<host>/accounts/oidc/sso/login/callback/
GPUPOSTURE_OIDC_ISSUER = env_str("GPUPOSTURE_OIDC_ISSUER")
GPUPOSTURE_OIDC_PROVIDER_ID = "sso"
GPUPOSTURE_OIDC_GROUPS_CLAIM = env_str("GPUPOSTURE_OIDC_GROUPS_CLAIM", "groups")


def _oidc_map(name: str, allowed: frozenset[str] | None) -> dict[str, frozenset[str]]:
    try:
        return parse_group_map(env_str(name), allowed=allowed)
    except MappingError as exc:
        raise ImproperlyConfigured(f"{name}: {exc}") from exc


# "idp-group=role,...": an SSO user's roles are exactly what their groups map to.
GPUPOSTURE_OIDC_ROLE_MAP = _oidc_map("GPUPOSTURE_OIDC_ROLE_MAP", ASSIGNABLE_ROLES)
# "idp-group=tenant-slug,...": the user views those tenants (tenant_viewer).
GPUPOSTURE_OIDC_TENANT_MAP = _oidc_map("GPUPOSTURE_OIDC_TENANT_MAP", None)
SOCIALACCOUNT_ADAPTER = "accounts.sso.SsoAccountAdapter"
SOCIALACCOUNT_EMAIL_AUTHENTICATION = False  # an IdP email never signs in a local account
# Accounts created or linked by SSO have no local password, and cannot get one through
# "forgot password" or "change password", unless this allows it (gpuposture.base.sso_passwords).
GPUPOSTURE_SSO_LOCAL_PASSWORD = env_bool("GPUPOSTURE_SSO_LOCAL_PASSWORD", False)
ACCOUNT_FORMS = {
    name: f"gpuposture.base.sso_passwords.{form}"
    for name, form in (
        ("change_password", "ChangePasswordForm"),
        ("set_password", "SetPasswordForm"),
        ("reset_password_from_key", "ResetPasswordKeyForm"),
    )
}
SOCIALACCOUNT_PROVIDERS: dict[str, dict] = {"openid_connect": {"OAUTH_PKCE_ENABLED": True}}
if GPUPOSTURE_OIDC_ISSUER:
    _client_id = env_str("GPUPOSTURE_OIDC_CLIENT_ID")
    _client_secret = env_secret("GPUPOSTURE_OIDC_CLIENT_SECRET")
    if not _client_id or not _client_secret:
        raise ImproperlyConfigured(
            "GPUPOSTURE_OIDC_ISSUER is set: set GPUPOSTURE_OIDC_CLIENT_ID and "
            "GPUPOSTURE_OIDC_CLIENT_SECRET (or GPUPOSTURE_OIDC_CLIENT_SECRET_FILE) too."
        )
    SOCIALACCOUNT_PROVIDERS["openid_connect"]["APPS"] = [
        {
            "provider_id": GPUPOSTURE_OIDC_PROVIDER_ID,
            "name": env_str("GPUPOSTURE_OIDC_NAME", "Single sign-on"),
            "client_id": _client_id,
            "secret": _client_secret,
            "settings": {
                "server_url": GPUPOSTURE_OIDC_ISSUER,
                "scope": env_list("GPUPOSTURE_OIDC_SCOPES", ["openid", "profile", "email"]),
            },
        }
    ]
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = not DEBUG
CSRF_COOKIE_SECURE = not DEBUG
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
# Preloading reaches every subdomain and takes months to undo: the domain's owner opts in
# (SECURE_HSTS_PRELOAD=1), so check --deploy's reminder about it (W021) is silenced.
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SILENCED_SYSTEM_CHECKS = ["security.W021"]
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
# Content-Security-Policy (django-csp 4): scripts only from our own files, never inline.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        # Plotly draws charts with <style> elements and style attributes, and Swagger UI's page
        # has an inline <style>: inline styles are allowed, inline scripts never are.
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
        "base-uri": ["'none'"],
        "object-src": ["'none'"],
    },
}
if GPUPOSTURE_OIDC_ISSUER:
    # "Sign in with SSO" posts to us, and we redirect the browser to the identity provider:
    # browsers hold that redirect to form-action too.
    _issuer = urlsplit(GPUPOSTURE_OIDC_ISSUER)
    CONTENT_SECURITY_POLICY["DIRECTIVES"]["form-action"].append(
        f"{_issuer.scheme}://{_issuer.netloc}"
    )

# --- the app's own Prometheus metrics (/metrics) -----------------------------------------------
# /metrics answers only `Authorization: Bearer <token>`; with no token it does not exist (404).
GPUPOSTURE_METRICS_TOKEN = env_secret("GPUPOSTURE_METRICS_TOKEN")
# A Celery worker serves its own metrics on this port (0: not served), with the same token.
GPUPOSTURE_WORKER_METRICS_PORT = env_int("GPUPOSTURE_WORKER_METRICS_PORT", 0)
GPUPOSTURE_WORKER_METRICS_ADDR = env_str("GPUPOSTURE_WORKER_METRICS_ADDR", "0.0.0.0")  # noqa: S104

# --- REST API ----------------------------------------------------------------------------------
REST_FRAMEWORK = {
    # Tokens first: their class answers 401 with WWW-Authenticate to a request without
    # credentials (personal, scoped, hashed tokens from /account/tokens/).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "gpuposture.base.tokens.ScopedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["gpuposture.base.permissions.RoleReadPermission"],
    # JSON bodies within size and depth limits: a 100,000-level body is a 400, never a 500.
    "DEFAULT_PARSER_CLASSES": [
        "gpuposture.base.parsers.SafeJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "gpuposture.base.pagination.StandardPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "gpuposture.base.api.json_exception_handler",
    # `?format=` names an export format (csv, sarif), not a DRF renderer.
    "URL_FORMAT_OVERRIDE": None,
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"]
    + (["rest_framework.renderers.BrowsableAPIRenderer"] if DEBUG else []),
}
SPECTACULAR_SETTINGS = {
    "TITLE": "gpuposture API",
    "DESCRIPTION": "GPU tenant isolation posture: tenants, inventory, findings and scores.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # Like every other endpoint: a gpuposture role is needed (DESIGN §10).
    "SERVE_PERMISSIONS": ["gpuposture.base.permissions.RoleReadPermission"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    # Several models have a `status` or `mode`: name each enum after what it is.
    "ENUM_NAME_OVERRIDES": {
        "SharingModeEnum": "tenants.policy.SHARING_MODES",
        "RunStatusEnum": "inventory.models.SyncRun.Status",
        "SharingRequestStatusEnum": "tenants.models.SharingRequest.Status",
    },
}

# --- Celery ------------------------------------------------------------------------------------
_broker = env_secret("CELERY_BROKER_URL")
# No broker: run tasks in-process so `make demo` needs no Redis; "memory://" makes sure no
# message can reach a broker that happens to listen on this machine.
CELERY_TASK_ALWAYS_EAGER = _broker is None
CELERY_BROKER_URL = _broker or "memory://"
CELERY_RESULT_BACKEND = env_secret("CELERY_RESULT_BACKEND", _broker or "cache+memory://")
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# The worker logs through LOGGING above (JSON lines in production), not Celery's own format.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", "celery")
# An unacknowledged task (its worker died) is delivered again after this; it must exceed the
# longest retry countdown, or a waiting retry would be delivered twice.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 7200),
    # Workers sweep for such tasks every interval x throttle seconds (kombu's defaults).
    "unacked_restore_interval": env_int("CELERY_RESTORE_INTERVAL", 10),
    "unacked_restore_throttle": env_int("CELERY_RESTORE_THROTTLE", 10),
    # A silent broker fails a connect within this many seconds, so a request that queues a
    # task answers "queue unreachable" quickly (gpuposture.base.queue) rather than hanging.
    "socket_connect_timeout": env_int("CELERY_BROKER_CONNECT_TIMEOUT", 2),
}
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = CELERY_BROKER_TRANSPORT_OPTIONS
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TIMEZONE = "UTC"

# --- gpuposture ------------------------------------------------------------------------------
# Personal API tokens last at most this many days (90 unless their owner picks another period).
GPUPOSTURE_TOKEN_MAX_DAYS = env_int("GPUPOSTURE_TOKEN_MAX_DAYS", 365)
GPUPOSTURE_MAX_SNAPSHOT_BYTES = env_int("GPUPOSTURE_MAX_SNAPSHOT_BYTES", 200 * 1024 * 1024)
# Platform namespaces besides kube-system, kube-public, kube-node-lease, the GPU Operator's
# namespace as found and those labelled gpuposture.io/platform=true (DESIGN §3). Only ConfigMaps
# in platform namespaces can be GPU configuration; a namespace a tenant claims never is one.
GPUPOSTURE_PLATFORM_NAMESPACES = env_list("GPUPOSTURE_PLATFORM_NAMESPACES", [])
# The trust class the pods of an unclassified namespace (no tenant claims it, not the platform's)
# are judged by: the strictest by default, so nothing unknown is judged leniently (DESIGN §3).
# Its format is checked here; that the class exists is a system check (tenants.checks).
GPUPOSTURE_UNCLASSIFIED_CLASS = env_str("GPUPOSTURE_UNCLASSIFIED_CLASS", "external") or "external"
if not re.fullmatch(r"[a-z][a-z0-9_]{0,39}", GPUPOSTURE_UNCLASSIFIED_CLASS):
    raise ImproperlyConfigured(
        f"GPUPOSTURE_UNCLASSIFIED_CLASS={GPUPOSTURE_UNCLASSIFIED_CLASS!r} is not a trust class slug"
    )
# Taint keys whose value names the trust class a node pool is for (DESIGN §3): K8S-002 and
# POD-009 accept `KEY=<class>:NoSchedule` (or NoExecute) for each; classes may add exact taints.
GPUPOSTURE_POOL_TAINT_KEYS = env_list("GPUPOSTURE_POOL_TAINT_KEYS", ["gpuposture.io/trust-class"])
# A sync holds its cluster's lease this long at most; a killed worker's lease then expires.
GPUPOSTURE_SYNC_LEASE_SECONDS = env_int("GPUPOSTURE_SYNC_LEASE_SECONDS", 300)
# Kubeconfig files registered through the UI or API must live here (paths only, no secrets
# in the database); the CLI may name any file.
GPUPOSTURE_KUBECONFIG_DIR = Path(env_str("GPUPOSTURE_KUBECONFIG_DIR", str(VAR_DIR / "kubeconfigs")))
# Credential plugins (`exec.command`, gcp `cmd-path`) a kubeconfig may run: names found on PATH
# or full paths. Unlisted ones are refused before anything runs (inventory.sources.kube_exec).
GPUPOSTURE_KUBECONFIG_EXEC_ALLOW = env_list("GPUPOSTURE_KUBECONFIG_EXEC_ALLOW", [])
GPUPOSTURE_SNAPSHOT_DIR = Path(env_str("GPUPOSTURE_SNAPSHOT_DIR", str(VAR_DIR / "snapshots")))
# Live clusters re-sync by watching what changed since the last sync; a full re-list still
# happens at least this often (a safety net against anything a watch could miss).
GPUPOSTURE_FULL_RESYNC_HOURS = env_int("GPUPOSTURE_FULL_RESYNC_HOURS", 24)
# How long the API server holds each watch open when asked for changes (all kinds in parallel).
GPUPOSTURE_WATCH_SECONDS = env_int("GPUPOSTURE_WATCH_SECONDS", 1)
# Seconds before each retry of a sync that failed for a reason retrying can help.
GPUPOSTURE_SYNC_RETRY_BACKOFF = [
    int(v) for v in env_list("GPUPOSTURE_SYNC_RETRY_BACKOFF", ["30", "120", "600", "1800"])
]
# Patch SLA per severity (days from the bulletin's release to patched nodes; STACK-005).
GPUPOSTURE_PATCH_SLA_DAYS = {
    severity: env_int(f"GPUPOSTURE_PATCH_SLA_{severity.upper()}_DAYS", default)
    for severity, default in (("critical", 7), ("high", 30), ("medium", 90), ("low", 180))
}
# Outbound fetches (CSAF provider feeds, Prometheus) go only to https URLs on public
# addresses; an admin may allow named hosts (host or host:port) that are internal mirrors, which
# may then also use plain http and private addresses.
GPUPOSTURE_FETCH_ALLOWED_HOSTS = env_list("GPUPOSTURE_FETCH_ALLOWED_HOSTS", [])
GPUPOSTURE_FETCH_TIMEOUT_SECONDS = env_int("GPUPOSTURE_FETCH_TIMEOUT_SECONDS", 20)
GPUPOSTURE_FETCH_MAX_BYTES = env_int("GPUPOSTURE_FETCH_MAX_BYTES", 20 * 1024 * 1024)
# Vendor CSAF feeds (provider-metadata.json URLs) that beat imports every N hours.
GPUPOSTURE_BULLETIN_FEEDS = env_list("GPUPOSTURE_BULLETIN_FEEDS", [])
GPUPOSTURE_BULLETIN_FEED_HOURS = env_int("GPUPOSTURE_BULLETIN_FEED_HOURS", 24)
# Scores follow changes (posture.rescore): a change marks its clusters and their re-score runs
# this many seconds later, so a burst of edits makes one re-score. A mark older than
# LOST_AFTER (its task lost, e.g. the queue was down) is enqueued again by the sweep, which
# also re-scores clusters an expiry moved (acceptances, approvals, questionnaires).
GPUPOSTURE_RESCORE_DEBOUNCE_SECONDS = env_int("GPUPOSTURE_RESCORE_DEBOUNCE_SECONDS", 5)
GPUPOSTURE_RESCORE_LOST_AFTER_SECONDS = env_int("GPUPOSTURE_RESCORE_LOST_AFTER_SECONDS", 600)
GPUPOSTURE_RESCORE_SWEEP_SECONDS = env_int("GPUPOSTURE_RESCORE_SWEEP_SECONDS", 300)
# Notifications (notifications/, docs/notifications.md). Email goes through Django's backend:
# SMTP by default (EMAIL_HOST, EMAIL_PORT, EMAIL_HOST_USER, EMAIL_HOST_PASSWORD[_FILE],
# EMAIL_USE_TLS), the console (printed) with DEBUG on, as in the demo.
EMAIL_BACKEND = env_str(
    "EMAIL_BACKEND",
    "django.core.mail.backends.console.EmailBackend"
    if DEBUG
    else "django.core.mail.backends.smtp.EmailBackend",
)
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_secret("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 20)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "gpuposture@localhost")
# Where links in notifications point (e.g. https://gpuposture.example.com); "" gives paths.
GPUPOSTURE_BASE_URL = (env_str("GPUPOSTURE_BASE_URL", "") or "").rstrip("/")
# Webhooks go to https URLs on public addresses only (the fetch guard, gpuposture.base.fetch);
# hosts listed here (host or host:port) may also use plain http and private addresses.
GPUPOSTURE_WEBHOOK_ALLOWED_HOSTS = env_list("GPUPOSTURE_WEBHOOK_ALLOWED_HOSTS", [])
# Seconds before each retry of a delivery that failed for a reason retrying can help.
GPUPOSTURE_NOTIFY_RETRY_BACKOFF = [
    int(v) for v in env_list("GPUPOSTURE_NOTIFY_RETRY_BACKOFF", ["30", "120", "600", "1800"])
]
GPUPOSTURE_NOTIFY_CHECK_SECONDS = env_int("GPUPOSTURE_NOTIFY_CHECK_SECONDS", 900)
CELERY_BEAT_SCHEDULE = {
    "notification checks": {
        "task": "notifications.tasks.notification_checks",
        "schedule": float(GPUPOSTURE_NOTIFY_CHECK_SECONDS),
    },
    "re-score what expired": {
        "task": "posture.tasks.rescore_sweep",
        "schedule": float(GPUPOSTURE_RESCORE_SWEEP_SECONDS),
    },
    "read telemetry sources": {"task": "telemetry.tasks.read_telemetry_sources", "schedule": 60.0},
    "roll up telemetry": {"task": "telemetry.tasks.rollup_telemetry", "schedule": 900.0},
    **(
        {
            "poll bulletin feeds": {
                "task": "inventory.tasks.poll_bulletin_feeds",
                "schedule": GPUPOSTURE_BULLETIN_FEED_HOURS * 3600.0,
            }
        }
        if GPUPOSTURE_BULLETIN_FEEDS
        else {}
    ),
}
# GPU telemetry (DCGM-Exporter): ATTR-001 fires on a GPU busier than the threshold for longer
# than the window with no scheduled pod holding it; ATTR-003 on a GPU node silent this long.
GPUPOSTURE_HIJACK_THRESHOLD_PERCENT = env_int("GPUPOSTURE_HIJACK_THRESHOLD_PERCENT", 20)
GPUPOSTURE_HIJACK_WINDOW_MINUTES = env_int("GPUPOSTURE_HIJACK_WINDOW_MINUTES", 15)
GPUPOSTURE_SILENT_NODE_MINUTES = env_int("GPUPOSTURE_SILENT_NODE_MINUTES", 60)
GPUPOSTURE_IDLE_THRESHOLD_PERCENT = env_int("GPUPOSTURE_IDLE_THRESHOLD_PERCENT", 5)
# Raw samples are kept this long; hourly roll-ups are kept (and charted) for good.
GPUPOSTURE_TELEMETRY_RETENTION_DAYS = env_int("GPUPOSTURE_TELEMETRY_RETENTION_DAYS", 7)
GPUPOSTURE_MAX_DCGM_BYTES = env_int("GPUPOSTURE_MAX_DCGM_BYTES", 50 * 1024 * 1024)
# How long a DRIFT- finding stays open after the change it reports.
GPUPOSTURE_DRIFT_WINDOW_DAYS = env_int("GPUPOSTURE_DRIFT_WINDOW_DAYS", 7)

# JSON lines with the request id in production (LOG_FORMAT=json, the default with DEBUG off);
# plain text for a person at a terminal.
LOG_FORMAT = env_str("LOG_FORMAT", "text" if DEBUG else "json")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "gpuposture.base.logs.RequestIdFilter"}},
    "formatters": {
        "json": {"()": "gpuposture.base.logs.JsonFormatter"},
        "text": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json" if LOG_FORMAT == "json" else "text",
            "filters": ["request_id"],
        }
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
