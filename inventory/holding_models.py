"""What sync history keeps of who held each node's exclusive GPU devices (inventory.holdings): one
row per node and set of devices, and the handovers between tenants the counts made certain
(LEAK-001 without telemetry)."""

from __future__ import annotations

from django.db import models


class GpuHolders(models.Model):
    """A node's devices' last holder set seen whole (namespace -> devices) and when; bounded:
    one row per node and set of devices (inventory.holding_sets), rewritten only when its
    holders change."""

    cluster = models.ForeignKey(
        "inventory.Cluster", on_delete=models.CASCADE, related_name="gpu_holders"
    )
    node_name = models.CharField(max_length=253)
    # inventory.holdings.Devices.name: "" the node's whole GPUs, a MIG resource, a DRA device.
    devices = models.CharField(max_length=600, default="", blank=True)
    gpu_count = models.PositiveIntegerField()
    holders = models.JSONField(default=dict)
    first_seen = models.DateTimeField()
    last_seen = models.DateTimeField()
    whole = models.BooleanField(default=True)
    # namespace -> ISO time it was last seen holding GPUs, where later than last_seen (a set
    # kept as last seen whole while some of it is still here: inventory.holdings.Held.seen).
    holders_seen = models.JSONField(default=dict)
    # The platform's holdings seen since, "<namespace>/<workload>" (inventory.holdings.Held):
    # no reset, so the set stays its last tenant's.
    between = models.JSONField(default=list)
    # The Node's metadata.uid the holders were seen on: a name reused by a new VM is another
    # machine, whose devices never held them (inventory.holdings.same_machine). "" where not
    # known (a row stored before it was kept).
    node_uid = models.CharField(max_length=128, default="", blank=True)

    objects = models.Manager()

    class Meta:
        app_label = "inventory"
        ordering = ["cluster_id", "node_name"]
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "node_name", "devices"], name="gpuholders_unique_devices"
            )
        ]

    def __str__(self) -> str:
        return f"{self.cluster_id}/{self.node_name}" + (f"/{self.devices}" if self.devices else "")


class SyncHandover(models.Model):
    """A device of a node surely passed between two parties between two syncs (by count)."""

    cluster = models.ForeignKey(
        "inventory.Cluster", on_delete=models.CASCADE, related_name="sync_handovers"
    )
    sync_run = models.ForeignKey(
        "inventory.SyncRun", null=True, on_delete=models.SET_NULL, related_name="+"
    )
    node_name = models.CharField(max_length=253)
    previous_holder = models.CharField(max_length=80)
    next_holder = models.CharField(max_length=80)
    previous_gpus = models.PositiveIntegerField()
    next_gpus = models.PositiveIntegerField()
    gpu_count = models.PositiveIntegerField()
    previous_end = models.DateTimeField()
    next_start = models.DateTimeField()
    # inventory.holdings.Devices: which of the node's devices the counts are of, and which
    # resets clear them (the one GPU they are on, or up to per_gpu of them per GPU reset).
    devices = models.CharField(max_length=600, default="", blank=True)
    gpu_uuid = models.CharField(max_length=100, default="", blank=True)
    per_gpu = models.PositiveIntegerField(default=1)
    # The platform's holdings of the devices between the two parties (not a reset).
    between = models.JSONField(default=list)
    # inventory.holdings.HoldingHandover.node_identity: "same_uid" (both syncs saw one Node
    # object), "not_compared" (the earlier record had no uid; the name taken for one machine);
    # "" on a row recorded before machines were compared.
    node_identity = models.CharField(max_length=20, default="", blank=True)

    objects = models.Manager()

    class Meta:
        app_label = "inventory"
        ordering = ["cluster_id", "next_start", "id"]
        indexes = [models.Index(fields=["cluster", "next_start"], name="handover_cluster_time")]

    def __str__(self) -> str:
        return f"{self.node_name}: {self.previous_holder} > {self.next_holder}"
