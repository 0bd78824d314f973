"""How long a node's MIG reconfiguration has been under way. PURE.

MIG Manager writes `nvidia.com/mig.config.state` (`pending`, `rebooting`, then `success` or
`failed`) with no time on it. A sync records when it first saw the node in a state still in
progress and when it last saw it there, carried over from the node as the last good sync left
it; SHARE-009 calls a reconfiguration stuck when two syncs far enough apart saw the same state
(a label has no timestamp, and two syncs seconds apart prove nothing), and failed at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime, timedelta

from inventory.snapshot import Node

IN_PROGRESS = ("pending", "rebooting")
FAILED = "failed"
# MIG Manager applies a layout in a minute or two, five to ten with a node reboot: a state still
# in progress on two syncs this far apart is stuck.
STUCK_AFTER = timedelta(minutes=15)


def carry_mig_state(previous: Iterable[Node], nodes: Iterable[Node], now: datetime) -> list[Node]:
    """`nodes` with mig_config_state_since / _seen set: kept from the `previous` node while its
    state is unchanged and in progress, `now` when the state is new; None otherwise."""
    before = {node.name: node for node in previous}
    stamp = now.isoformat()
    result = []
    for node in nodes:
        state = (node.mig_config_state or "").strip().lower()
        if state not in IN_PROGRESS:
            stale = node.mig_config_state_since or node.mig_config_state_seen
            result.append(
                replace(node, mig_config_state_since=None, mig_config_state_seen=None)
                if stale
                else node
            )
            continue
        old = before.get(node.name)
        same = old is not None and (old.mig_config_state or "").strip().lower() == state
        since = old.mig_config_state_since if same and old.mig_config_state_since else stamp
        result.append(replace(node, mig_config_state_since=since, mig_config_state_seen=stamp))
    return result


# Layouts that leave no MIG device to see: MIG off, or on with no instance (mig-parted's
# all-disabled and all-enabled).
NO_DEVICES = ("all-disabled", "all-enabled")
NOT_APPLIED = "not applied"


def mig_layout_problem(node: Node) -> dict[str, str] | None:
    """Why the node's MIG layout is not known, or None: its reconfiguration failed, or has been
    in progress on syncs at least STUCK_AFTER apart, or a layout was requested that MIG Manager
    never reported on and the devices GFD sees are not MIG devices (what the devices are is
    then anyone's guess, and the isolation the requested layout would give may not exist)."""
    state = (node.mig_config_state or "").strip().lower()
    requested = node.mig_config or ""
    if state == FAILED:
        return {"state": state, "requested": requested, "why": "the reconfiguration failed"}
    if not state and (why := _not_applied(node, requested)):
        return {"state": NOT_APPLIED, "requested": requested, "why": why}
    if state not in IN_PROGRESS or not (node.mig_config_state_since and node.mig_config_state_seen):
        return None
    since = datetime.fromisoformat(node.mig_config_state_since)
    seen = datetime.fromisoformat(node.mig_config_state_seen)
    if seen - since < STUCK_AFTER:
        return None
    minutes = int((seen - since).total_seconds() // 60)
    why = f"{state} on syncs {minutes} minutes apart (since {node.mig_config_state_since})"
    return {"state": state, "requested": requested, "why": why}


def _not_applied(node: Node, requested: str) -> str | None:
    """Why a requested MIG layout is not in effect, or None: `nvidia.com/mig.config` asks for
    MIG devices, no `mig.config.state` says MIG Manager ever acted on it, and GFD (which labels
    the devices it finds) shows none: under the single strategy its product label has no
    `-MIG-<profile>`, under mixed no `nvidia.com/mig-*` resource is advertised. Without GFD's
    product label nothing says what the devices are: None."""
    product = node.labels.get("nvidia.com/gpu.product", "")
    if not requested or requested in NO_DEVICES or not product:
        return None
    if node.mig_strategy == "single" and "-MIG-" not in product:
        seen = f"GFD's product label {product!r} names whole GPUs"
    elif node.mig_strategy == "mixed" and not any(
        name.startswith("nvidia.com/mig-") and count > 0
        for name, count in node.gpu_capacity.items()
    ):
        seen = "the node advertises no nvidia.com/mig-* resource"
    else:
        return None
    return (
        f"nvidia.com/mig.config requests {requested!r} but MIG Manager never reported a state "
        f"(no nvidia.com/mig.config.state) and {seen}: the layout is not in effect"
    )
