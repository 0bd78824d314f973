"""Clusters, their GPU nodes and pods, the other objects the checks read, and sync runs."""

from __future__ import annotations

from django.db import models

from gpuposture.base.querysets import Scope, ScopedQuerySet
from inventory.snapshot.accelerators import (
    accelerator_vendors,
    dra_not_inventoried,
    dra_vendors,
    not_inventoried,
)
from providers.models import Provider
from tenants.models import Tenant, slug_validator
from tenants.redaction import Field


class ClusterQuerySet(ScopedQuerySet):
    # A tenant viewer sees the clusters that run their tenants' pods.
    scope = Scope(paths=("pods__tenant",))


class Cluster(models.Model):
    """A Kubernetes cluster we read GPU inventory from."""

    class Source(models.TextChoices):
        SNAPSHOT = "snapshot", "kubectl JSON snapshot"
        KUBECONFIG = "kubeconfig", "kubeconfig file"
        IN_CLUSTER = "in_cluster", "in-cluster service account"

    name = models.CharField(max_length=63, unique=True, validators=[slug_validator])
    description = models.CharField(max_length=200, blank=True)
    provider = models.ForeignKey(
        Provider, null=True, blank=True, on_delete=models.SET_NULL, related_name="clusters"
    )
    source = models.CharField(max_length=20, choices=Source.choices, default=Source.SNAPSHOT)
    # How to reach the cluster: paths and a context name only, never a token or key.
    kubeconfig_path = models.CharField(max_length=500, blank=True)
    kube_context = models.CharField(max_length=253, blank=True)
    snapshot_paths = models.JSONField(default=list, blank=True)
    sync_interval_minutes = models.PositiveIntegerField(
        default=60, help_text="Scheduled sync interval; 0 means manual syncs only."
    )
    # A sync holds this lease (STYLE rule 4: taken by a conditional UPDATE); it expires so a
    # killed worker cannot block the cluster for ever.
    sync_lock_until = models.DateTimeField(null=True, blank=True)
    sync_lock_token = models.CharField(max_length=40, blank=True)
    # Live clusters: the resourceVersion each kind was last read at, so the next sync watches
    # only what changed since; a full re-list happens at least every GPUPOSTURE_FULL_RESYNC_HOURS.
    watch_state = models.JSONField(default=dict, blank=True)
    last_full_sync_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ClusterQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def has_stored_source(self) -> bool:
        """Whether a sync can re-read the cluster: a kubeconfig or in-cluster account, or stored
        snapshot files. One synced once from files given on the command line has none."""
        return source_is_stored(self.source, self.snapshot_paths)


def source_is_stored(source: str, snapshot_paths: list[str]) -> bool:
    """Cluster.has_stored_source, for a row read as values()."""
    return source != Cluster.Source.SNAPSHOT or bool(snapshot_paths)


class SyncRunQuerySet(ScopedQuerySet):
    scope = Scope(via="cluster")


class SyncRun(models.Model):
    """One attempt to read a cluster and apply what was read."""

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    class Mode(models.TextChoices):
        FULL = "full", "full list"
        WATCH = "watch", "changes since the last sync"

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="sync_runs")
    source = models.CharField(max_length=300, help_text="What was read: files, kubeconfig, ...")
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.FULL)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.RUNNING)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    trigger = models.CharField(max_length=20, default="cli")
    # The Celery task that ran it: a redelivered copy of a task that already synced skips.
    task_id = models.CharField(max_length=64, blank=True, db_index=True)
    counts = models.JSONField(default=dict, blank=True)
    progress = models.JSONField(default=dict, blank=True, help_text="Objects read so far.")
    changes = models.JSONField(default=dict, blank=True)
    warnings = models.JSONField(default=list, blank=True)
    # Kinds this run certainly did not read (inventory.kinds_read): the checks that need them
    # are not judged on it, and keep their findings as they were.
    kinds_unread = models.JSONField(default=list, blank=True)
    # How many files a snapshot sync read (a directory is read to any depth); none for a live read.
    files_read = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)

    objects = SyncRunQuerySet.as_manager()
    # A tenant viewer sees their clusters' runs: warnings and errors name objects of every
    # namespace (inventory.presenter hides other tenants').
    redacted_fields = {"source": Field.TEXT, "warnings": Field.VALUE, "error": Field.TEXT}

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["cluster", "-started_at"], name="syncrun_cluster_started")]

    def __str__(self) -> str:
        return f"{self.cluster} {self.started_at:%Y-%m-%d %H:%M} {self.status}"

    @property
    def duration_seconds(self) -> float | None:
        if not self.finished_at:
            return None
        return (self.finished_at - self.started_at).total_seconds()


class NodeQuerySet(ScopedQuerySet):
    # A tenant viewer sees the nodes their tenants' pods run on.
    scope = Scope(paths=("pods__tenant",))


class Node(models.Model):
    """A Kubernetes node and its GPU facts (DESIGN §8 node fields)."""

    class SharingStrategy(models.TextChoices):
        NONE = "none", "none (whole GPUs)"
        TIME_SLICING = "time_slicing", "time-slicing"
        MPS = "mps", "MPS"
        MIG = "mig", "MIG"
        VGPU = "vgpu", "vGPU"
        # Its device-plugin config could not be read and GFD's labels do not say (STACK-007).
        UNKNOWN = "unknown", "unknown (config unreadable)"

    class PatchStatus(models.TextChoices):
        CURRENT = "current", "current"
        BELOW_BASELINE = "below_baseline", "below baseline"
        UNKNOWN = "unknown", "unknown"

    class DescribedBy(models.TextChoices):
        KUBERNETES = "kubernetes", "Kubernetes API"
        # A host the API does not list, imported with import_nvidia_smi: syncs keep it.
        NVIDIA_SMI = "nvidia-smi", "nvidia-smi -q -x only"

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="nodes")
    name = models.CharField(max_length=253)
    is_gpu_node = models.BooleanField(default=False)
    # GPUs of any vendor (snapshot Node.is_accelerator_node): an AMD, Intel or Gaudi node is one
    # but no GPU node, whose stack gpuposture cannot inventory (checklist item 3).
    is_accelerator_node = models.BooleanField(default=False)
    gpu_model = models.CharField(max_length=120, blank=True)
    gpu_count = models.PositiveIntegerField(null=True, blank=True)
    driver_version = models.CharField(max_length=40, blank=True)
    container_toolkit_version = models.CharField(max_length=40, blank=True)
    device_plugin_version = models.CharField(max_length=40, blank=True)
    gpu_operator_version = models.CharField(max_length=40, blank=True)
    firmware_version = models.CharField(max_length=60, blank=True)
    sharing_strategy = models.CharField(
        max_length=20, choices=SharingStrategy.choices, default=SharingStrategy.NONE
    )
    time_slicing_replicas = models.PositiveIntegerField(null=True, blank=True)
    mig_strategy = models.CharField(max_length=20, blank=True)
    mig_config = models.CharField(max_length=120, blank=True)
    described_by = models.CharField(
        max_length=20, choices=DescribedBy.choices, default=DescribedBy.KUBERNETES
    )
    taints = models.JSONField(default=list, blank=True)
    labels = models.JSONField(default=dict, blank=True)
    # "" (null in the API) on a node known to hold no GPU: nothing to patch
    # (inventory.patching.no_gpu). A new row reads unknown until its patch status is computed
    # (a sync does it at once).
    patch_status = models.CharField(
        max_length=20, choices=PatchStatus.choices, default=PatchStatus.UNKNOWN, blank=True
    )
    # What the node is exposed to (inventory.patching.status.Exposure as dicts) and why unknown.
    patch_exposures = models.JSONField(default=list, blank=True)
    patch_notes = models.JSONField(default=list, blank=True)
    # Bulletin bounds the node is in but NOT affected by, each with its reason (a condition not
    # met, a component not installed): Exposure dicts whose `reason` has a code and a text.
    patch_not_affected = models.JSONField(default=list, blank=True)
    # The component kinds behind patch_notes (STACK-004 reports firmware only from here).
    patch_unknown = models.JSONField(default=list, blank=True)
    # The full normalised snapshot record; the checks read it back unchanged.
    data = models.JSONField(default=dict)
    data_hash = models.CharField(max_length=40, blank=True)
    first_seen = models.DateTimeField(auto_now_add=True)
    # Rows are rewritten only when their facts change, so a re-sync costs what changed.
    changed_at = models.DateTimeField()

    objects = NodeQuerySet.as_manager()
    # A node shared with other tenants may be labelled or tainted with their names; its patch
    # records name bulletins a viewer may not read (TLP, tenants.redaction.advisory_record).
    redacted_fields = {
        "labels": Field.VALUE,
        "taints": Field.VALUE,
        "mig_config": Field.TEXT,
        "patch_exposures": Field.VALUE,
        "patch_not_affected": Field.VALUE,
        "patch_notes": Field.VALUE,
    }

    class Meta:
        ordering = ["cluster__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "name"], name="node_unique_per_cluster")
        ]

    def __str__(self) -> str:
        return f"{self.cluster.name}/{self.name}"

    @property
    def other_accelerators(self) -> dict[str, int]:
        """Other vendors' accelerators its capacity lists (resource -> count), as synced."""
        return dict(self.data.get("accelerator_resources") or {})

    @property
    def dra_accelerators(self) -> dict[str, int]:
        """Other vendors' DRA drivers -> GPU devices their slices publish here, as synced."""
        return dict(self.data.get("dra_accelerators") or {})

    @property
    def accelerator_vendors(self) -> list[str]:
        """Whose accelerators those are ("AMD", "Intel", "Intel Gaudi", ...)."""
        found = accelerator_vendors(self.other_accelerators) + dra_vendors(self.dra_accelerators)
        return list(dict.fromkeys(found))

    @property
    def other_vendor_only(self) -> bool:
        """Holds other vendors' accelerators and no NVIDIA GPU: its NVIDIA fields say nothing
        of them (not "CPU-only", not "none (whole GPUs)")."""
        others = self.other_accelerators or self.dra_accelerators  # the plugin's, or DRA's
        return bool(others) and not self.is_gpu_node

    @property
    def not_inventoried(self) -> str | None:
        """Why those accelerators have no model, count or versions here; None without any."""
        said = [
            not_inventoried(self.other_accelerators),
            dra_not_inventoried(self.dra_accelerators),
        ]
        return "; ".join(s for s in said if s) or None


class PodQuerySet(ScopedQuerySet):
    scope = Scope(paths=("tenant",))


class Pod(models.Model):
    """A pod as last seen; `tenant` is the tenant claiming its namespace, null where none does:
    a platform namespace's pod, or an unclassified one's (inventory.platform.unclaimed_party)."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="pods")
    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    node = models.ForeignKey(
        Node, null=True, blank=True, on_delete=models.SET_NULL, related_name="pods"
    )
    tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.SET_NULL, related_name="pods"
    )
    phase = models.CharField(max_length=20)
    service_account = models.CharField(max_length=253, blank=True)
    gpu_resources = models.JSONField(default=dict, blank=True)
    data = models.JSONField(default=dict)
    data_hash = models.CharField(max_length=40, blank=True)
    first_seen = models.DateTimeField(auto_now_add=True)
    changed_at = models.DateTimeField()

    objects = PodQuerySet.as_manager()

    class Meta:
        ordering = ["cluster__name", "namespace", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "namespace", "name"], name="pod_unique_per_cluster"
            )
        ]
        indexes = [models.Index(fields=["cluster", "namespace"], name="pod_cluster_namespace")]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


class ClusterObject(models.Model):
    """Any other normalised object the checks read (namespaces, quotas, sharing configs,
    controllers, services, RBAC), keyed by its snapshot kind."""

    class Kind(models.TextChoices):
        NAMESPACE = "namespace"
        QUOTA = "quota"
        CONFIGMAP = "configmap"
        SHARING_CONFIG = "sharing_config"
        WORKLOAD = "workload"
        SERVICE = "service"
        ROLE = "role"
        BINDING = "binding"
        INGRESS = "ingress"
        NETWORK_POLICY = "network_policy"
        GPU_OPERATOR_POLICY = "gpu_operator_policy"
        OWNER = "owner"  # the controller of an object on a pod's owner chain (OwnerLink)
        # A ConfigMap pods take env from: key names, and NVIDIA_VISIBLE_DEVICES only
        ENV_CONFIGMAP = "env_configmap"
        # Dynamic Resource Allocation (resource.k8s.io), read-only
        DRA_CLAIM = "dra_claim"
        DRA_CLAIM_TEMPLATE = "dra_claim_template"
        DRA_DEVICE_CLASS = "dra_device_class"
        DRA_SLICE = "dra_slice"
        # Admission control (VAP and bindings, Kyverno, Gatekeeper) and how each live list went
        ADMISSION_POLICY = "admission_policy"
        ADMISSION_READ = "admission_read"
        # A ServiceAccount's workload-identity annotations (POD-010), nothing else of it
        SERVICE_ACCOUNT = "service_account"

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="kube_objects")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    namespace = models.CharField(max_length=63, blank=True)
    name = models.CharField(max_length=320)
    data = models.JSONField(default=dict)
    data_hash = models.CharField(max_length=40, blank=True)

    objects = models.Manager()

    class Meta:
        ordering = ["cluster_id", "kind", "namespace", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "kind", "namespace", "name"], name="clusterobject_unique"
            )
        ]

    def __str__(self) -> str:
        # A cluster-scoped object (Node, ClusterRole) has no namespace: no leading slash.
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"


class NodeHostFacts(models.Model):
    """Facts about a node read on the host (nvidia-smi -q -x), kept across syncs and merged
    into the node where the Kubernetes API does not say (firmware, or an unlabelled driver)."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="host_facts")
    node_name = models.CharField(max_length=253)
    source = models.CharField(max_length=40, default="nvidia-smi")
    facts = models.JSONField(default=dict)
    imported_at = models.DateTimeField()

    objects = models.Manager()

    class Meta:
        ordering = ["cluster_id", "node_name"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "node_name"], name="hostfacts_unique_node")
        ]

    def __str__(self) -> str:
        return f"{self.cluster_id}/{self.node_name} ({self.source})"


# The bulletin, patch-SLA and drift models live with their domain (inventory/bulletins/,
# inventory/patching/, drift_models.py); imported here so Django registers them under this app and
# `from inventory.models import Bulletin` keeps working.
from inventory.bulletins.models import Bulletin, BulletinFix, BulletinImport  # noqa: E402, F401
from inventory.bulletins.revision_models import BulletinRevision  # noqa: E402, F401
from inventory.drift_models import DriftEvent  # noqa: E402, F401
from inventory.holding_models import GpuHolders, SyncHandover  # noqa: E402, F401
from inventory.patching.models import PatchSla  # noqa: E402, F401
