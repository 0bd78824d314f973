"""gpuposture's own settings (GPUPOSTURE_*): limits, sync, fetches, re-scores, email and
notifications, telemetry, metrics."""

from __future__ import annotations

import re
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from gpuposture.settings.core import DEBUG, VAR_DIR
from gpuposture.settings.env import env_bool, env_int, env_list, env_secret, env_str

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
# The overview and the findings API for readers of every tenant are cached per posture version
# (posture/read_cache.py); this bounds how long an edit that bypasses the audit log (a
# Django shell, an admin page that records no event) takes to show. 0: never cached.
GPUPOSTURE_READ_CACHE_SECONDS = env_int("GPUPOSTURE_READ_CACHE_SECONDS", 300)
# The most findings one export may hold (posture/api.py streams them, ~50,000 in a few
# seconds); a larger one is refused with a message asking to filter.
GPUPOSTURE_EXPORT_MAX_ROWS = env_int("GPUPOSTURE_EXPORT_MAX_ROWS", 100_000)

# --- the app's own Prometheus metrics (/metrics) -----------------------------------------------
# /metrics answers only `Authorization: Bearer <token>`; with no token it does not exist (404).
GPUPOSTURE_METRICS_TOKEN = env_secret("GPUPOSTURE_METRICS_TOKEN")
# A Celery worker serves its own metrics on this port (0: not served), with the same token.
GPUPOSTURE_WORKER_METRICS_PORT = env_int("GPUPOSTURE_WORKER_METRICS_PORT", 0)
GPUPOSTURE_WORKER_METRICS_ADDR = env_str("GPUPOSTURE_WORKER_METRICS_ADDR", "0.0.0.0")  # noqa: S104
