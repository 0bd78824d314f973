from __future__ import annotations

from django.apps import AppConfig


class PartitionerConfig(AppConfig):
    """The MIG partitioner: lay out MIG instances on a GPU model, check them against the
    tenants' trust classes, export a mig-parted config. No models: it reads inventory's nodes."""

    name = "partitioner"
