"""The app's URLs plus `/bench/floor/`, for the load bench only (bench/bench_settings.py with
BENCH_FLOOR=1): a bare DRF view behind the same middleware, authentication and permission
classes as the API, returning pre-built JSON bytes (the file BENCH_FLOOR_BODY, a saved
findings page, so the same size). Its requests/s is the framework's floor: what any endpoint
costs before it does any work of its own."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from django.http import HttpResponse
from django.urls import path
from rest_framework.request import Request
from rest_framework.views import APIView

from gpuposture.urls import urlpatterns as app_urlpatterns


@cache
def body() -> bytes:
    """Read once per worker, at its first request (the file is written after the migrations)."""
    return Path(os.environ.get("BENCH_FLOOR_BODY", os.devnull)).read_bytes() or b"{}"


class FloorView(APIView):
    """The default authentication and permission classes; no query, no serializer."""

    def get(self, request: Request) -> HttpResponse:
        return HttpResponse(body(), content_type="application/json")


urlpatterns = [path("bench/floor/", FloorView.as_view(), name="bench-floor"), *app_urlpatterns]
