"""The Django core: paths, debug, secret key, apps, middleware, templates, database, static and
uploaded files, cache, logging."""

from __future__ import annotations

import secrets
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from gpuposture.settings.env import env_bool, env_int, env_list, env_secret, env_str

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
    # Inside CommonMiddleware: its APPEND_SLASH redirect still sees the 404 (as JSON) after.
    "gpuposture.base.middleware.ApiNotFoundMiddleware",
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

_cache_url = env_str("CACHE_URL")
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _cache_url}
    if _cache_url
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
}

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
