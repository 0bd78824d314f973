from __future__ import annotations

from django.apps import AppConfig


class BaseConfig(AppConfig):
    name = "gpuposture.base"
    label = "gpuposture_base"
    verbose_name = "gpuposture base"
