"""Reads for the VEX export: the statements for the GPU nodes of one cluster a user may see,
and the document in the format asked for."""

from __future__ import annotations

from datetime import datetime

from gpuposture.base.querysets import sees_every_row
from inventory.bulletins.patch_refresh import nodes_patch_judged
from inventory.bulletins.vex.csaf import csaf_document
from inventory.bulletins.vex.openvex import openvex_document
from inventory.bulletins.vex.statements import NodeJudgement, Statement, cluster_statements
from inventory.models import Bulletin, Cluster, Node

VEX_FORMATS = {  # format -> (content type, file name suffix)
    "openvex": ("application/json", "openvex.json"),
    "csaf": ("application/json", "csaf-vex.json"),
}


class NoStatements(Exception):
    """Nothing to state: no imported bulletin concerns a GPU node of the cluster."""


def cluster_vex_statements(*, cluster: Cluster, user) -> list[Statement]:
    """The statements for the cluster's GPU nodes `user` may see (a tenant viewer: the nodes
    their pods run on; None: the CLI, every node), from the bulletins that user may read. Five
    queries at most whatever the number of nodes."""
    readable = Node.objects.all() if user is None else Node.objects.visible_to(user)
    nodes = list(
        readable.filter(cluster=cluster, is_gpu_node=True)
        .only("pk", "cluster_id", "name", "labels", "data")
        .order_by("name")
    )
    judged = nodes_patch_judged(nodes=nodes)
    statements = cluster_statements(
        NodeJudgement(node.name, node.data.get("gpu_model") or None, status)
        for node, status in judged
    )
    if user is None or sees_every_row(user, Bulletin):
        return statements
    # A bulletin the user may not read (TLP:AMBER, RED, ...) states nothing to them here either.
    readable = set(Bulletin.objects.visible_to(user).values_list("tracking_id", flat=True))
    return [s for s in statements if s.advisory_id in readable]


def vex_document(
    kind: str, *, cluster: Cluster, statements: list[Statement], now: datetime, base_url: str = ""
) -> dict[str, object]:
    """The document in format `kind`; NoStatements when there is nothing to state (both
    formats need at least one statement to be valid)."""
    if not statements:
        raise NoStatements(
            f"No VEX statement for cluster {cluster.name}: no imported bulletin concerns its "
            "GPU nodes (import the vendor's CSAF bulletins, then sync the cluster)."
        )
    if kind == "csaf":
        return csaf_document(cluster.name, statements, now=now, namespace=base_url)
    return openvex_document(cluster.name, statements, now=now)
