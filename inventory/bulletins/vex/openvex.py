"""An OpenVEX (v0.2.0) document from a cluster's VEX statements. PURE.

Each statement names one vulnerability and one product: the node (an IRI of its own) with the
component as its subcomponent, identified by a purl (inventory.bulletins.vex.statements.Product). A
not-affected statement carries its standard justification and, as `status_notes`, the reason
in words: the published schema accepts a justification or an impact statement but not both."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import datetime
from urllib.parse import quote

from inventory.bulletins.vex.statements import (
    AFFECTED,
    NOT_AFFECTED,
    UNDER_INVESTIGATION,
    Statement,
)

CONTEXT = "https://openvex.dev/ns/v0.2.0"
AUTHOR = "gpuposture"
TOOLING = "gpuposture (bulletin exposures judged against each node's versions and facts)"


def node_iri(cluster: str, node: str) -> str:
    return f"urn:gpuposture:node:{quote(cluster, safe='')}:{quote(node, safe='')}"


def openvex_document(
    cluster: str, statements: Sequence[Statement], *, now: datetime
) -> dict[str, object]:
    """The document; its @id is a digest of its statements, so the same facts give the same
    id and a changed judgement a new one."""
    body = [_statement(cluster, s) for s in statements]
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:32]
    return {
        "@context": CONTEXT,
        "@id": f"urn:gpuposture:vex:{quote(cluster, safe='')}:{digest}",
        "author": AUTHOR,
        "role": "Cluster operator's posture tool",
        "timestamp": _iso(now),
        "version": 1,
        "tooling": TOOLING,
        "statements": body,
    }


def _statement(cluster: str, s: Statement) -> dict[str, object]:
    vulnerability: dict[str, object] = {"name": s.vulnerability}
    if s.advisory_id and s.advisory_id != s.vulnerability:
        vulnerability["aliases"] = [s.advisory_id]
    out: dict[str, object] = {
        "vulnerability": vulnerability,
        "products": [
            {
                "@id": node_iri(cluster, s.product.node),
                "subcomponents": [{"@id": s.product.purl, "identifiers": {"purl": s.product.purl}}],
            }
        ],
        "status": s.status,
        "supplier": "NVIDIA",
    }
    if s.status == AFFECTED:
        out["action_statement"] = s.action or ""
    elif s.status == NOT_AFFECTED:
        out["justification"] = s.justification
        out["status_notes"] = s.impact or ""
    elif s.status == UNDER_INVESTIGATION:
        out["status_notes"] = s.impact or ""
    else:
        out["status_notes"] = (
            f"{s.product.label}: past the affected range {s.affected_range} ({s.advisory_id})."
        )
    return out


def _iso(when: datetime) -> str:
    return when.isoformat().replace("+00:00", "Z")
