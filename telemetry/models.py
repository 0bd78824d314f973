"""GPU telemetry: DCGM-Exporter samples attributed to tenants, their hourly roll-ups, where each
cluster's metrics come from, and attestations that a GPU was reset between tenants."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models

from gpuposture.base.querysets import Scope, ScopedQuerySet
from inventory.models import Cluster
from telemetry.prometheus_api import parse_matchers
from telemetry.samples import GpuSample
from tenants.models import Tenant
from tenants.redaction import Field


class TenantScopedQuerySet(ScopedQuerySet):
    scope = Scope(paths=("tenant",))


def validate_matchers(value: str) -> None:
    try:
        parse_matchers(value)
    except ValueError as exc:
        raise ValidationError(str(exc)) from exc


class TelemetrySource(models.Model):
    """Where a cluster's DCGM-Exporter metrics are read: a Prometheus HTTP API (a range of
    history each time) or an exporter's /metrics page (one reading each time)."""

    class Kind(models.TextChoices):
        PROMETHEUS = "prometheus", "Prometheus HTTP API"
        EXPORTER = "exporter", "DCGM-Exporter /metrics page"

    cluster = models.OneToOneField(Cluster, on_delete=models.CASCADE, related_name="telemetry")
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.PROMETHEUS)
    url = models.URLField(max_length=500, help_text="https; internal hosts need the allow-list.")
    # Where one Prometheus holds several clusters' metrics: the labels of this cluster's.
    match = models.CharField(
        max_length=500,
        blank=True,
        validators=[validate_matchers],
        help_text="Prometheus only: LABEL=VALUE,... that select this cluster's series "
        "(e.g. cluster=prod-east); empty takes every series as this cluster's.",
    )
    interval_minutes = models.PositiveIntegerField(default=5)
    last_read_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)

    objects = models.Manager()

    def __str__(self) -> str:
        return f"{self.cluster.name}: {self.get_kind_display()}"


class Confidence(models.TextChoices):
    EXACT = "exact"
    SHARED = "shared"
    NONE = "none"


class Attribution(models.TextChoices):
    TENANT = "tenant"
    PLATFORM = "platform"
    UNATTRIBUTED = "unattributed"


class GpuReading(models.Model):
    """One reading of one GPU or MIG instance, as the exporter labelled it and as we attributed
    it (a GpuSample stored). Kept for the retention period; rolled up into GpuUsageHourly."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="gpu_readings")
    time = models.DateTimeField()
    hostname = models.CharField(max_length=253)
    gpu = models.CharField(max_length=16, blank=True)
    uuid = models.CharField(max_length=80, blank=True)
    model = models.CharField(max_length=120, blank=True)
    gi_id = models.CharField(max_length=8, blank=True)
    gi_profile = models.CharField(max_length=40, blank=True)
    util = models.FloatField(null=True, blank=True)
    gr_active = models.FloatField(null=True, blank=True)
    fb_used_mib = models.FloatField(null=True, blank=True)
    namespace = models.CharField(max_length=63, blank=True)
    pod = models.CharField(max_length=253, blank=True)
    container = models.CharField(max_length=253, blank=True)
    tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    attribution = models.CharField(max_length=15, choices=Attribution.choices)
    confidence = models.CharField(max_length=10, choices=Confidence.choices)

    objects = TenantScopedQuerySet.as_manager()

    class Meta:
        constraints = [
            # Re-reading an overlapping range (Prometheus) or the same file stores nothing twice.
            models.UniqueConstraint(
                fields=["cluster", "hostname", "uuid", "gpu", "gi_id", "namespace", "pod", "time"],
                name="gpureading_unique_series_time",
            )
        ]
        indexes = [
            models.Index(fields=["cluster", "time"], name="gpureading_cluster_time"),
            models.Index(fields=["time"], name="gpureading_time"),
        ]

    def __str__(self) -> str:
        return f"{self.hostname} {self.uuid} {self.gi_id} {self.time:%Y-%m-%d %H:%M:%S}"

    def as_sample(self) -> GpuSample:
        return GpuSample(
            time=self.time,
            hostname=self.hostname,
            gpu=self.gpu,
            uuid=self.uuid,
            model=self.model,
            gi_id=self.gi_id,
            gi_profile=self.gi_profile,
            util=self.util,
            gr_active=self.gr_active,
            fb_used_mib=self.fb_used_mib,
            namespace=self.namespace,
            pod=self.pod,
            container=self.container,
        )


class DeviceUsage(models.Model):
    """One device's use by one tenant (or the platform, or nobody known) over a period: what
    the hourly and daily roll-ups share."""

    hostname = models.CharField(max_length=253)
    uuid = models.CharField(max_length=80, blank=True)
    gi_id = models.CharField(max_length=8, blank=True)
    gi_profile = models.CharField(max_length=40, blank=True)
    model = models.CharField(max_length=120, blank=True)
    tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    attribution = models.CharField(max_length=15, choices=Attribution.choices)
    confidence = models.CharField(max_length=10, choices=Confidence.choices)
    gpu_hours = models.FloatField(default=0.0)  # whole-GPU time
    mig_slice_hours = models.FloatField(default=0.0)  # MIG instance time x compute slices
    busy_gpu_hours = models.FloatField(default=0.0)
    samples = models.PositiveIntegerField(default=0)

    objects = TenantScopedQuerySet.as_manager()

    class Meta:
        abstract = True


class GpuUsageHourly(DeviceUsage):
    """An hour of one device's use."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="gpu_hours")
    hour = models.DateTimeField()
    busy_max = models.FloatField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "hour", "hostname", "uuid", "gi_id", "tenant", "attribution"],
                name="gpuhourly_unique",
            )
        ]
        indexes = [models.Index(fields=["cluster", "hour"], name="gpuhourly_cluster_hour")]

    def __str__(self) -> str:
        return f"{self.hostname} {self.uuid} {self.gi_id} {self.hour:%Y-%m-%d %H}h"


class GpuUsageDaily(DeviceUsage):
    """A day of one device's use: the hourly roll-ups summed, so the utilisation page reads
    ~24x fewer rows (a month of 2,000 GPUs: ~190k rows, not 2.3 M)."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="gpu_days")
    day = models.DateField()

    class Meta:
        indexes = [
            models.Index(fields=["cluster", "day"], name="gpudaily_cluster_day"),
            models.Index(fields=["day"], name="gpudaily_day"),
        ]

    def __str__(self) -> str:
        return f"{self.hostname} {self.uuid} {self.gi_id} {self.day}"


class ResetAttestationQuerySet(ScopedQuerySet):
    # Both tenants of a reset see it: the one that left the GPU and the one that came next.
    scope = Scope(paths=("previous_tenant", "next_tenant"))


class ResetAttestation(models.Model):
    """A record that a GPU (or every GPU of a node) was reset between tenants."""

    class Method(models.TextChoices):
        GPU_RESET = "gpu_reset", "nvidia-smi --gpu-reset"
        REBOOT = "reboot", "node reboot"
        VM_RECYCLE = "vm_recycle", "VM recycled"

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="resets")
    node = models.CharField(max_length=253)
    gpu_uuid = models.CharField(
        max_length=80, blank=True, help_text="Empty: every GPU of the node."
    )
    reset_at = models.DateTimeField()
    method = models.CharField(max_length=20, choices=Method.choices)
    previous_tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    next_tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    recorded_by = models.CharField(max_length=150)
    note = models.TextField(blank=True, max_length=2000)
    recorded_at = models.DateTimeField(auto_now_add=True)

    objects = ResetAttestationQuerySet.as_manager()
    # A reset between two tenants is shown to each: the other is hidden (inventory.presenter).
    redacted_fields = {
        "previous_tenant": Field.TENANT,
        "next_tenant": Field.TENANT,
        "note": Field.TYPED,
    }

    class Meta:
        ordering = ["-reset_at", "-id"]
        indexes = [models.Index(fields=["cluster", "node", "reset_at"], name="reset_node_time")]

    def __str__(self) -> str:
        return f"{self.node} {self.gpu_uuid or '(all GPUs)'} reset {self.reset_at:%Y-%m-%d %H:%M}"
