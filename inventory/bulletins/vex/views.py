"""The VEX page of a cluster: every statement as a table, and the two downloads."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from inventory.bulletins.vex.selectors import cluster_vex_statements
from inventory.bulletins.vex.statements import counts
from inventory.models import Cluster

# A page shows this many statements; the downloads hold them all (a large cluster has nodes
# x vulnerabilities x components of them).
PAGE_ROWS = 500


def cluster_vex(request: HttpRequest, name: str) -> HttpResponse:
    cluster = get_object_or_404(Cluster.objects.visible_to(request.user), name=name)
    statements = cluster_vex_statements(cluster=cluster, user=request.user)
    return render(
        request,
        "inventory/cluster_vex.html",
        {
            "cluster": cluster,
            "statements": statements[:PAGE_ROWS],
            "total": len(statements),
            "counts": counts(statements),
        },
    )
