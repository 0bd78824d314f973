"""Which resolved findings an import's bulletins closed (issue 16 item 5): only those that
closed because the baseline moved, not an upgrade or a tenant leaving an exposed node."""

from __future__ import annotations

import pytest

from posture.bulletin_effects import resolved_by_bulletins

EXPOSURE = {
    "component": "driver",
    "installed": "550.90.07",
    "advisory_id": "5630",
    "affected": "< 550.163.01",
}
EVIDENCE = {"node": "gpu-1", "exposures": [EXPOSURE]}
SAME = {"driver": "550.90.07"}


@pytest.mark.parametrize(
    "evidence, bulletins, node, resolved",
    [
        (EVIDENCE, {"5630"}, (SAME, []), True),  # the bulletin no longer exposes the node
        ({"late_exposures": [EXPOSURE]}, {"5630"}, (SAME, []), True),  # STACK-005
        (EVIDENCE, {"5614"}, (SAME, []), False),  # another bulletin's import
        (EVIDENCE, {"5630"}, ({"driver": "550.163.01"}, []), False),  # the node was upgraded
        (EVIDENCE, {"5630"}, (SAME, [EXPOSURE]), False),  # still exposed: the tenant moved
        (EVIDENCE, {"5630"}, None, False),  # the node is gone
        ({"node": "gpu-1", "unknown": ["driver_version"]}, {"5630"}, (SAME, []), False),
    ],
)
def test_resolved_by_bulletins(evidence, bulletins, node, resolved):
    assert resolved_by_bulletins(evidence, bulletins, node) is resolved
