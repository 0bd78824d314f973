"""Drift between two successful syncs, as the DRIFT- checks report it (inventory.drift)."""

from __future__ import annotations

from django.db import models
from django.db.models import Exists, OuterRef, Q, Value
from django.db.models.functions import Cast, Concat, StrIndex

from gpuposture.base.querysets import Scope, ScopedQuerySet
from inventory.models import Cluster, Node, SyncRun
from tenants.redaction import Field


def _reaching_their_nodes(user) -> Q:
    """A tenant viewer sees a drift event of a node only where the node is one they see
    (their tenants' pods run on it: Node's scope, the nodes API's), so an event of a node
    outside their scope is neither listed nor named; a change that names no node (a
    controller, RBAC, a config no node uses) reaches the cluster's whole GPU stack and stays
    shown to each viewer of the cluster. In the same query: `nodes` is a JSON list of node
    names (DNS names: no character JSON escapes), matched as '"name"' in its text."""
    named = StrIndex(
        Cast(OuterRef("nodes"), models.TextField()), Concat(Value('"'), "name", Value('"'))
    )
    theirs = Node.objects.visible_to(user).filter(cluster_id=OuterRef("cluster_id"))
    return Q(nodes=[]) | Q(Exists(theirs.annotate(at=named).filter(at__gt=0)))


class DriftEventQuerySet(ScopedQuerySet):
    # The clusters a user sees; a tenant viewer, of those, only what reaches their nodes.
    scope = Scope(via="cluster", within=_reaching_their_nodes)


class DriftEvent(models.Model):
    """A change between two successful syncs that the DRIFT- checks report."""

    class Kind(models.TextChoices):
        SHARING_CONFIG = "sharing_config", "sharing or MIG configuration"
        COMPONENT = "component", "device plugin or GPU Operator"
        NODE = "node", "GPU node labels or taints"
        RBAC = "rbac", "RBAC reaching the GPU stack"

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="drift_events")
    sync_run = models.ForeignKey(SyncRun, on_delete=models.CASCADE, related_name="drift_events")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    check_id = models.CharField(max_length=20)
    subject_kind = models.CharField(max_length=40)
    subject_namespace = models.CharField(max_length=63, blank=True)
    subject_name = models.CharField(max_length=320)
    summary = models.CharField(max_length=300)
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)
    nodes = models.JSONField(default=list, blank=True, help_text="GPU nodes the change affects.")
    detected_at = models.DateTimeField()

    objects = DriftEventQuerySet.as_manager()
    # Drift of a cluster is shown to each tenant on it; the changed object may be another's.
    redacted_fields = {
        "subject_namespace": Field.NAMESPACE,
        "subject_name": Field.SUBJECT_NAME,
        "summary": Field.TEXT,
        "before": Field.VALUE,
        "after": Field.VALUE,
    }

    class Meta:
        ordering = ["-detected_at", "-id"]
        indexes = [models.Index(fields=["cluster", "-detected_at"], name="drift_cluster_time")]

    def __str__(self) -> str:
        return f"{self.check_id} {self.subject_kind} {self.subject_name}"
