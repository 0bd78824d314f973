from __future__ import annotations

from django.apps import AppConfig


class PostureConfig(AppConfig):
    name = "posture"
