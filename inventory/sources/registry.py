"""Which source reads a cluster (STYLE rule 6: a registry of backends)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inventory.sources.base import ClusterSource, SourceError
from inventory.sources.files import SnapshotFileSource

if TYPE_CHECKING:
    from inventory.models import Cluster


def source_for_cluster(cluster: Cluster) -> ClusterSource:
    if cluster.source == "snapshot":
        if not cluster.snapshot_paths:
            raise SourceError(
                f"cluster {cluster.name} has no snapshot paths to read; sync it with "
                "`sync_cluster --snapshot PATH` or register a kubeconfig",
                retryable=False,
            )
        return SnapshotFileSource(cluster.snapshot_paths)
    # Imported here so a snapshot-only installation never loads the kubernetes client.
    from django.conf import settings

    from inventory.sources.kube import KubeSettings, KubeSource

    tuning = KubeSettings(
        watch_seconds=settings.GPUPOSTURE_WATCH_SECONDS,
        exec_allow=tuple(settings.GPUPOSTURE_KUBECONFIG_EXEC_ALLOW),
    )
    if cluster.source == "kubeconfig":
        return KubeSource(
            kubeconfig=cluster.kubeconfig_path,
            context=cluster.kube_context or None,
            settings=tuning,
        )
    if cluster.source == "in_cluster":
        return KubeSource(in_cluster=True, settings=tuning)
    raise SourceError(f"unknown source {cluster.source!r}", retryable=False)
