"""GPU cloud providers (neoclouds) that host clusters."""

from __future__ import annotations

from django.db import models

from gpuposture.base.querysets import ScopedQuerySet
from gpuposture.base.roles import PROCUREMENT, has_role, reads_all_posture


class ProviderQuerySet(ScopedQuerySet):
    def visible_to(self, user):  # type: ignore[no-untyped-def]
        if reads_all_posture(user) or has_role(user, PROCUREMENT):
            return self
        return self.none()


class Provider(models.Model):
    """A company that hosts GPU clusters for us."""

    slug = models.SlugField(max_length=63, unique=True)
    name = models.CharField(max_length=120)
    website = models.URLField(blank=True)
    contact_name = models.CharField(max_length=120, blank=True)
    contact_email = models.EmailField(blank=True)
    notes = models.TextField(blank=True, max_length=4000)

    objects = ProviderQuerySet.as_manager()

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.name
