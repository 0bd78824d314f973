"""Celery: the broker (none: tasks run in-process), delivery guarantees, the beat schedule.
Task names come from each app's queue module, the one place each is written."""

from __future__ import annotations

from gpuposture.settings.app import (
    GPUPOSTURE_BULLETIN_FEED_HOURS,
    GPUPOSTURE_BULLETIN_FEEDS,
    GPUPOSTURE_NOTIFY_CHECK_SECONDS,
    GPUPOSTURE_RESCORE_SWEEP_SECONDS,
)
from gpuposture.settings.env import env_int, env_secret, env_str
from inventory import queue as inventory_queue
from notifications import queue as notifications_queue
from posture import queue as posture_queue
from telemetry import queue as telemetry_queue

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

CELERY_BEAT_SCHEDULE = {
    "notification checks": {
        "task": notifications_queue.NOTIFICATION_CHECKS,
        "schedule": float(GPUPOSTURE_NOTIFY_CHECK_SECONDS),
    },
    "re-score what expired": {
        "task": posture_queue.RESCORE_SWEEP,
        "schedule": float(GPUPOSTURE_RESCORE_SWEEP_SECONDS),
    },
    "read telemetry sources": {"task": telemetry_queue.READ_TELEMETRY_SOURCES, "schedule": 60.0},
    "roll up telemetry": {"task": telemetry_queue.ROLLUP_TELEMETRY, "schedule": 900.0},
    **(
        {
            "poll bulletin feeds": {
                "task": inventory_queue.POLL_BULLETIN_FEEDS,
                "schedule": GPUPOSTURE_BULLETIN_FEED_HOURS * 3600.0,
            }
        }
        if GPUPOSTURE_BULLETIN_FEEDS
        else {}
    ),
}
