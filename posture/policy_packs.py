"""The generated admission policy pack DRIFT-005 compares the deployed one with.

THE one place posture reaches the enforcement app's generator. The enforcement app sits above
posture (imports go one way), so it registers its generator here from its AppConfig.ready();
without it (not installed) no pack is generated and DRIFT-005 reports nothing. Only the
dialects of which the cluster already runs objects of ours are generated: with no pack deployed
there is nothing to drift, and K8S-009 says what is missing.

The pack is compared in Enforce mode: that is where every class's pack is meant to end, so a
pack left in Audit (the first step of a rollout) stays a DRIFT-005 finding until it enforces.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from inventory.models import Cluster
from inventory.snapshot import ClusterSnapshot
from inventory.snapshot_admission import KYVERNO, VAP, VAP_BINDING
from posture.rules.drift.pack_diff import MANAGED_BY, OURS

DIALECT_OF_ENGINE = {VAP: "vap", VAP_BINDING: "vap", KYVERNO: "kyverno"}

# (cluster, dialect, the posture inputs read for it) -> the pack's objects
PackGenerator = Callable[[Cluster, str, Any], list[dict[str, Any]]]
_generator: list[PackGenerator] = []


def pack_generator_register(generator: PackGenerator | None) -> None:
    """Set (or, with None, clear) the function that builds a cluster's pack in a dialect."""
    _generator[:] = [generator] if generator else []


def deployed_dialects(snapshot: ClusterSnapshot) -> list[str]:
    return sorted(
        {
            DIALECT_OF_ENGINE[p.engine]
            for p in snapshot.admission_policies
            if p.engine in DIALECT_OF_ENGINE and p.labels.get(MANAGED_BY) == OURS
        }
    )


def expected_policy_packs(
    cluster: Cluster, snapshot: ClusterSnapshot, inputs: Any = None
) -> dict[str, tuple[dict[str, Any], ...]]:
    dialects = deployed_dialects(snapshot)
    if not dialects:
        return {}
    if not _generator:
        return {}
    generate = _generator[0]
    return {d: tuple(generate(cluster, d, inputs)) for d in dialects}


def generated_policy_pack(cluster: Cluster, *, dialect: str) -> list[dict[str, Any]]:
    """The cluster's pack in a dialect as DRIFT-005 expects it deployed (Enforce), from the
    registry and the cluster's last sync; empty when no generator is registered."""
    if not _generator:
        return []
    return list(_generator[0](cluster, dialect, None))
