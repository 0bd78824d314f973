"""Sessions that end: after GPUPOSTURE_SESSION_IDLE_MINUTES without a request, and at the
latest SESSION_COOKIE_AGE after sign-in, however busy.

Django alone gives neither: a database session's expiry moves forward each time the session is
saved. So the session keeps when its user signed in and when it was last used; the last use is
written at most once a minute, so busy pages cost no write per request.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import logout
from django.http import HttpRequest, HttpResponse

STARTED_KEY = "gpuposture.session_started"
SEEN_KEY = "gpuposture.session_seen"
SEEN_EVERY_SECONDS = 60


def session_expired(
    *, started: float, seen: float, now: float, idle_seconds: int, max_seconds: int
) -> str | None:
    """Why a signed-in session is over ("idle" or "absolute"), or None while it is valid.
    A limit of 0 or less is off."""
    if max_seconds > 0 and now - started > max_seconds:
        return "absolute"
    if idle_seconds > 0 and now - seen > idle_seconds:
        return "idle"
    return None


def stamp_session_at_login(sender: Any, request: HttpRequest | None, **kwargs: Any) -> None:
    """A sign-in starts both clocks, saved with the sign-in's own session write.
    (user_logged_in receiver, connected in BaseConfig.ready: session plumbing, as Django's
    own last_login update, not business logic.)"""
    if request is not None and hasattr(request, "session"):
        request.session[STARTED_KEY] = request.session[SEEN_KEY] = time.time()


class SessionExpiryMiddleware:
    """After AuthenticationMiddleware and MessageMiddleware; before any view, so the
    login-required middleware sends an expired visitor to the login page."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.user.is_authenticated:
            self._check(request)
        return self.get_response(request)

    def _check(self, request: HttpRequest) -> None:
        session = request.session
        now = time.time()
        idle_minutes = settings.GPUPOSTURE_SESSION_IDLE_MINUTES
        started = session.get(STARTED_KEY)
        seen = session.get(SEEN_KEY)
        if started is None or seen is None:
            # A session signed in before the stamps existed (sign-ins stamp it themselves).
            session[STARTED_KEY] = session[SEEN_KEY] = now
            return
        why = session_expired(
            started=started,
            seen=seen,
            now=now,
            idle_seconds=idle_minutes * 60,
            max_seconds=settings.SESSION_COOKIE_AGE,
        )
        if why is not None:
            logout(request)
            if request.path_info.startswith("/api/"):
                return  # DRF answers the now anonymous call with 401/403
            messages.info(
                request,
                f"You were signed out after {idle_minutes} minutes without activity."
                if why == "idle"
                else "Your session reached its maximum length; sign in again.",
            )
            return
        if now - seen >= SEEN_EVERY_SECONDS:
            session[SEEN_KEY] = now
