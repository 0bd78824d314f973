"""Import `nvidia-smi -q -x` for one node (DESIGN §7: for nodes the API does not describe, and
the VBIOS the API never publishes)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from gpuposture.base.rescore import rescore_request
from inventory import snapshot as snap
from inventory.hostfacts import merge_host_facts, node_from_host_facts
from inventory.models import Cluster, Node, NodeHostFacts
from inventory.sources.nvidia_smi import parse_nvidia_smi, summarise
from inventory.sync_rows import node_values


@dataclass(frozen=True)
class HostFactsResult:
    facts: dict
    node_found: bool  # the Kubernetes API lists the node: the facts were merged into it
    node_created: bool = False  # a host the API does not list, imported for the first time


def node_host_facts_import(*, cluster: Cluster, node_name: str, xml: bytes) -> HostFactsResult:
    """Keep what `nvidia-smi -q -x` says about a node. A node the API lists gets the facts
    merged now (later syncs merge them again: the API never publishes the VBIOS); a host the
    API does not list becomes a node described by nvidia-smi only, rewritten by each import.
    Malformed XML raises NvidiaSmiError before anything is written."""
    facts = summarise(parse_nvidia_smi(xml))
    now = timezone.now()
    with transaction.atomic():
        NodeHostFacts.objects.update_or_create(
            cluster=cluster,
            node_name=node_name,
            defaults={"facts": facts, "source": "nvidia-smi", "imported_at": now},
        )
        node = Node.objects.select_for_update().filter(cluster=cluster, name=node_name).first()
        from_api = node is not None and node.described_by != Node.DescribedBy.NVIDIA_SMI
        if from_api:
            described = merge_host_facts(snap.from_dict(snap.Node, node.data), facts)
        else:
            described = node_from_host_facts(node_name, facts)
        created = node is None
        if created:
            node = Node(cluster=cluster, name=node_name)
        for key, value in node_values(described).items():
            setattr(node, key, value)
        node.changed_at = now
        node.save()
    from inventory.bulletins.patch_refresh import nodes_patch_refresh

    nodes_patch_refresh(cluster_id=cluster.pk, node_names=[node_name])
    # The node's patch status and its checks move: re-score the cluster (DESIGN §5).
    rescore_request(clusters=[cluster.pk], reason="nvidia-smi import")
    return HostFactsResult(facts=facts, node_found=from_api, node_created=created)
