"""gpuposture: GPU tenant isolation posture."""

from gpuposture.celery import app as celery_app

__all__ = ("celery_app",)
