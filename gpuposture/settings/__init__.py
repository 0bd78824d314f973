"""Settings for gpuposture, all from the environment (DESIGN §11)."""

from __future__ import annotations

import secrets
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from gpuposture.settings.env import env_bool, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = BASE_DIR / "var"

DEBUG = env_bool("DEBUG", False)


def _secret_key() -> str:
    key = env_str("SECRET_KEY")
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
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "gpuposture.base",
    "audit",
    "tenants",
    "providers",
    "inventory",
    "telemetry",
    "posture",
]

MIDDLEWARE = [
    "gpuposture.base.request_id.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "gpuposture.base.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "allauth.account.middleware.AccountMiddleware",
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
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'gpuposture.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
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
        "OPTIONS": {"min_length": 12},
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
LOGIN_REDIRECT_URL = "overview"
ACCOUNT_LOGOUT_REDIRECT_URL = "account_login"
ACCOUNT_LOGIN_METHODS = {"username"}
ACCOUNT_SIGNUP_FIELDS = ["username*", "password1*", "password2*"]
ACCOUNT_EMAIL_VERIFICATION = "none"
ACCOUNT_ADAPTER = "gpuposture.base.auth.NoSignupAccountAdapter"
ACCOUNT_RATE_LIMITS = {"login_failed": "10/m/ip,5/5m/key"}
SESSION_COOKIE_AGE = env_int("SESSION_COOKIE_AGE", 8 * 3600)
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = not DEBUG
CSRF_COOKIE_SECURE = not DEBUG
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = False
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]

# --- REST API ----------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["gpuposture.base.permissions.RoleReadPermission"],
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
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
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
_broker = env_str("CELERY_BROKER_URL")
# No broker: run tasks in-process so `make demo` needs no Redis; "memory://" makes sure no
# message can reach a broker that happens to listen on this machine.
CELERY_TASK_ALWAYS_EAGER = _broker is None
CELERY_BROKER_URL = _broker or "memory://"
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND", _broker or "cache+memory://")
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
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
}
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = CELERY_BROKER_TRANSPORT_OPTIONS
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TIMEZONE = "UTC"

# --- gpuposture ------------------------------------------------------------------------------
GPUPOSTURE_MAX_SNAPSHOT_BYTES = env_int("GPUPOSTURE_MAX_SNAPSHOT_BYTES", 200 * 1024 * 1024)
# A sync holds its cluster's lease this long at most; a killed worker's lease then expires.
GPUPOSTURE_SYNC_LEASE_SECONDS = env_int("GPUPOSTURE_SYNC_LEASE_SECONDS", 300)
# Kubeconfig files registered through the UI or API must live here (paths only, no secrets
# in the database); the CLI may name any file.
GPUPOSTURE_KUBECONFIG_DIR = Path(env_str("GPUPOSTURE_KUBECONFIG_DIR", str(VAR_DIR / "kubeconfigs")))
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
CELERY_BEAT_SCHEDULE = {
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

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
