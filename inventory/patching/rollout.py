"""Suggest a patch rollout for the GPU nodes below the bulletin baseline, per cluster. PURE.

The unit of a rollout is the node pool (`gpuposture.io/pool`): a pool runs one kind of tenant,
so it is never split across waves. Per cluster:

- The canary is the pool whose failure hurts least: lowest tenant sensitivity, then fewest
  below-baseline nodes, then name. It runs first whatever its exposure.
- The other pools follow by urgency: highest max CVSS (none counts as 0), then oldest exposure
  (advisory release date), then more sensitive tenants first, then name. Consecutive pools are
  packed into one wave while it stays within `max_wave_share` of the cluster's below-baseline
  nodes; a pool larger than that gets a wave of its own.
- Targets and rollback are keyed by component, and the driver also by branch ("driver R535"):
  a node on R535 moves to the R535 fix, never to another branch. The target is the highest fixed
  version among the wave's exposures; rollback lists the versions the wave's nodes run now.
- A pool with no sensitivity rank may host anyone: it is canary only when no ranked pool is
  below baseline, and in the urgency order it counts as the most sensitive rank given (0 if
  none). With no ranks at all, every pool is rank 0 and size then name pick the canary.
- Current nodes are counted and left out; unknown nodes are listed, since we cannot tell what
  they need. Exposure dicts are `inventory.patching.status.Exposure` as stored on
  Node.patch_exposures.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cmp_to_key

from inventory.bulletins.csaf.versions import compare, parse_version
from inventory.patching.status import BELOW_BASELINE, CURRENT
from inventory.patching.targets import closed_bound
from inventory.patching.versions import driver_branch

_NEVER = datetime.max.replace(tzinfo=UTC)  # an exposure without a date sorts as the newest


@dataclass(frozen=True)
class RolloutNode:
    cluster: str
    pool: str
    name: str
    patch_status: str  # "current" / "below_baseline" / "unknown"
    exposures: tuple[dict, ...] = ()
    versions: dict[str, str] = field(default_factory=dict)  # component ("driver") -> running
    # component -> who upgrades it on the node (Node.upgrade_by); {} where not resolved.
    upgrade_by: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Wave:
    number: int
    label: str  # "canary", "wave 2", ...
    pools: list[str]
    nodes: list[str]
    targets: dict[str, str]  # "driver R535" / "container_toolkit" -> version to move to
    rollback: dict[str, list[str]]  # same keys -> versions the nodes run now, ascending
    advisories: list[str]
    cves: list[str]
    max_cvss: float | None
    reason: str
    unfixed: list[str]  # "<key> <advisory>" exposures the target does not close (none named)
    # Same keys as targets -> who upgrades it on the wave's nodes ("GPU Operator", "node
    # image", ...): several where the nodes differ, "not resolved" for a node synced before.
    upgrade_by: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class RolloutPlan:
    cluster: str
    waves: list[Wave]
    current_nodes: int
    unknown_nodes: list[str]


@dataclass(frozen=True)
class _Pool:
    name: str
    nodes: tuple[RolloutNode, ...]  # below-baseline nodes only, by name
    sensitivity: int
    ranked: bool

    @property
    def exposures(self) -> list[dict]:
        return [e for node in self.nodes for e in node.exposures]


def rollout_plan(
    nodes: Iterable[RolloutNode],
    pool_sensitivity: Mapping[tuple[str, str], int] | None = None,
    max_wave_share: float = 0.34,
) -> list[RolloutPlan]:
    """One plan per cluster, by cluster name; a cluster with nothing below baseline has no waves."""
    if not 0 < max_wave_share <= 1:
        raise ValueError(f"max_wave_share must be in (0, 1], not {max_wave_share!r}")
    ranks = dict(pool_sensitivity or {})
    by_cluster: dict[str, list[RolloutNode]] = defaultdict(list)
    for node in nodes:
        by_cluster[node.cluster].append(node)
    return [_cluster_plan(c, by_cluster[c], ranks, max_wave_share) for c in sorted(by_cluster)]


def _cluster_plan(cluster: str, nodes: list[RolloutNode], ranks: dict, share: float) -> RolloutPlan:
    nodes = sorted(nodes, key=lambda n: n.name)
    unranked = max(ranks.values(), default=0)
    below: dict[str, list[RolloutNode]] = defaultdict(list)
    for node in nodes:
        if node.patch_status == BELOW_BASELINE:
            below[node.pool].append(node)
    pools = [
        _Pool(name, tuple(members), ranks.get((cluster, name), unranked), (cluster, name) in ranks)
        for name, members in sorted(below.items())
    ]
    return RolloutPlan(
        cluster=cluster,
        waves=_waves(pools, share),
        current_nodes=sum(node.patch_status == CURRENT for node in nodes),
        # Anything not current or below (normally "unknown") cannot be planned: show it.
        unknown_nodes=[n.name for n in nodes if n.patch_status not in (CURRENT, BELOW_BASELINE)],
    )


def _waves(pools: list[_Pool], share: float) -> list[Wave]:
    if not pools:
        return []
    canary = min(pools, key=lambda p: (not p.ranked, p.sensitivity, len(p.nodes), p.name))
    cap = share * sum(len(p.nodes) for p in pools)
    groups: list[list[_Pool]] = []
    for pool in sorted((p for p in pools if p is not canary), key=_urgency):
        if groups and sum(len(p.nodes) for p in groups[-1]) + len(pool.nodes) <= cap:
            groups[-1].append(pool)
        else:
            groups.append([pool])
    waves = [_wave(1, [canary], _canary_reason(canary, len(pools)))]
    for number, group in enumerate(groups, start=2):
        waves.append(_wave(number, group, _urgency_reason(group)))
    return waves


def _urgency(pool: _Pool) -> tuple:
    released = min((_released(e) for e in pool.exposures), default=_NEVER)
    return (-_max_cvss(pool.exposures, 0.0), released, -pool.sensitivity, pool.name)


def _canary_reason(pool: _Pool, pool_count: int) -> str:
    if pool_count == 1:
        return "only pool below baseline: canary"
    if not pool.ranked:
        return "smallest pool (no tenant sensitivity given): canary"
    if pool.sensitivity == 0:
        return "smallest pool with only internal tenants: canary"
    return f"smallest of the least sensitive pools (sensitivity {pool.sensitivity}): canary"


def _urgency_reason(group: list[_Pool]) -> str:
    lead = group[0]
    cvss = _max_cvss(lead.exposures, None)
    oldest = min((_released(e) for e in lead.exposures), default=_NEVER)
    text = f"next most urgent: max CVSS {cvss:g}" if cvss is not None else "next: no CVSS given"
    if oldest != _NEVER:
        text += f", oldest advisory released {oldest.date().isoformat()}"
    if lead.sensitivity:
        text += f", tenants of sensitivity {lead.sensitivity}"
    if len(group) > 1:
        text += f"; with {len(group) - 1} more pool(s) up to the wave share"
    return text


def _wave(number: int, pools: list[_Pool], reason: str) -> Wave:
    nodes = sorted((n for p in pools for n in p.nodes), key=lambda n: n.name)
    fixed: dict[str, list[str]] = defaultdict(list)
    running: dict[str, set[str]] = defaultdict(set)
    unfixed: list[tuple[str, dict]] = []  # (key, exposure) with no fixed version
    by: dict[str, set[str]] = defaultdict(set)
    for node in nodes:
        for exposure in node.exposures:
            key = _key(exposure, node)
            by[key].add(node.upgrade_by.get(exposure["component"]) or "not resolved")
            now = node.versions.get(exposure["component"]) or exposure.get("installed")
            if now:
                running[key].add(now)
            version = exposure.get("fixed_version")
            if version and parse_version(version):
                fixed[key].append(version)
            else:
                unfixed.append((key, exposure))
    targets = {key: _ascending(versions)[-1] for key, versions in sorted(fixed.items())}
    exposures = [e for p in pools for e in p.exposures]
    return Wave(
        number=number,
        label="canary" if number == 1 else f"wave {number}",
        pools=[p.name for p in pools],
        nodes=[n.name for n in nodes],
        targets=targets,
        rollback={key: _ascending(versions) for key, versions in sorted(running.items())},
        advisories=sorted({e["advisory_id"] for e in exposures if e.get("advisory_id")}),
        cves=sorted({cve for e in exposures for cve in e.get("cves") or ()}),
        max_cvss=_max_cvss(exposures, None),
        reason=reason,
        unfixed=_unfixed(unfixed, targets),
        upgrade_by={key: sorted(who) for key, who in sorted(by.items())},
    )


def _unfixed(unfixed: list[tuple[str, dict]], targets: dict[str, str]) -> list[str]:
    """ "<key> <advisory>" of the exposures with no fixed version the wave's target does not
    close: all but a range closed above that the target passes (inventory.patching.targets:
    NVIDIA 5703's R535 vGPU Manager row, its fix dropped as a typo, closes at 535.309.01)."""
    listed = set()
    for key, exposure in unfixed:
        bound = closed_bound(exposure)
        if bound is None or not (key in targets and bound.cleared_by(targets[key])):
            listed.add(f"{key} {exposure.get('advisory_id', '?')}")
    return sorted(listed)


def _key(exposure: dict, node: RolloutNode) -> str:
    return component_key(exposure, node.versions.get("driver") or "")


def component_key(exposure: dict, running_driver: str = "") -> str:
    """What a rollout moves, for one exposure: the component, and the driver by branch
    ("driver R535"). Fix-first actions (posture/actions.py) group upgrades by it too."""
    component = exposure["component"]
    if component != "driver":
        return component
    # The branch of the driver the node runs, as inventory.patching.status matched the fix to it.
    branch = driver_branch(exposure.get("installed") or running_driver)
    return f"driver {branch}" if branch else "driver"


def highest_version(versions: Iterable[str]) -> str:
    """The highest of the versions (the target of a move); `versions` must not be empty."""
    return _ascending(versions)[-1]


def _ascending(versions: Iterable[str]) -> list[str]:
    # Text order first so versions that compare equal (1.0 and 1.0.0) keep a fixed order.
    ordered = sorted(set(versions))
    if all(parse_version(v) for v in ordered):
        ordered.sort(key=cmp_to_key(compare))
    return ordered


def _max_cvss(exposures: Iterable[dict], default: float | None) -> float | None:
    scores = [float(e["max_cvss"]) for e in exposures if e.get("max_cvss") is not None]
    return max(scores, default=default)


def _released(exposure: dict) -> datetime:
    try:
        moment = datetime.fromisoformat(exposure.get("released") or "")
    except ValueError:
        return _NEVER
    # Stored dates are aware; a naive one is read as UTC so the two can be compared.
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
