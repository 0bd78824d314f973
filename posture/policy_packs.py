"""The generated admission policy pack DRIFT-005 compares the deployed one with.

THE one place posture reaches the enforcement app's generator, imported lazily: without it
(not installed) no pack is generated and DRIFT-005 reports nothing. Only the dialects of
which the cluster already runs objects of ours are generated: with no pack deployed there is
nothing to drift, and K8S-009 says what is missing.
"""

from __future__ import annotations

from typing import Any

from inventory.models import Cluster
from inventory.snapshot import ClusterSnapshot
from inventory.snapshot_admission import KYVERNO, VAP, VAP_BINDING
from posture.rules.drift.pack_diff import MANAGED_BY, OURS

DIALECT_OF_ENGINE = {VAP: "vap", VAP_BINDING: "vap", KYVERNO: "kyverno"}


def deployed_dialects(snapshot: ClusterSnapshot) -> list[str]:
    return sorted(
        {
            DIALECT_OF_ENGINE[p.engine]
            for p in snapshot.admission_policies
            if p.engine in DIALECT_OF_ENGINE and p.labels.get(MANAGED_BY) == OURS
        }
    )


def expected_policy_packs(
    cluster: Cluster, snapshot: ClusterSnapshot
) -> dict[str, tuple[dict[str, Any], ...]]:
    dialects = deployed_dialects(snapshot)
    if not dialects:
        return {}
    try:
        from enforcement.packs import policy_pack  # noqa: PLC0415 - optional app, see above
    except ImportError:
        return {}
    # mode=None: each class's own mode (Enforce or Audit), what the deployed pack should be.
    return {d: tuple(policy_pack(cluster, dialect=d, mode=None)) for d in dialects}
