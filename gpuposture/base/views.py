"""Project-level views that need no login: health."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET
from kombu import Connection


@login_not_required
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness: the process answers. It says nothing else to an anonymous caller."""
    return JsonResponse({"status": "ok"})


@login_not_required
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """Readiness: the database answers, and the broker does when there is one (without one,
    tasks run in-process and there is nothing to reach)."""
    parts = {"database": _database_up(), "broker": _broker_state()}
    # `?require=database`: the web's readiness probe in deploy/ — pages still serve while Redis
    # is down (tasks are refused with a message), so the broker must not take web pods out.
    needs_broker = request.GET.get("require") != "database"
    ready = parts["database"] == "up" and not (needs_broker and parts["broker"] == "down")
    return JsonResponse(
        {"status": "ok" if ready else "unavailable", **parts}, status=200 if ready else 503
    )


def _database_up() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception:  # noqa: BLE001 - any database failure means not ready
        return "down"
    return "up"


def _broker_state() -> str:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return "in-process"
    try:
        with Connection(settings.CELERY_BROKER_URL, connect_timeout=2) as broker:
            broker.ensure_connection(max_retries=1, timeout=2, interval_start=0, interval_step=0)
    except Exception:  # noqa: BLE001 - unreachable, refused, auth: all mean not ready
        return "down"
    return "up"
