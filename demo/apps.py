from __future__ import annotations

from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo world and its `demo` command. No models; the top layer: it loads everything
    through the other apps' services, and nothing imports it."""

    name = "demo"
