"""The SLA clock of STACK-005: a node below a bulletin's fix breaches the SLA once more days
than its severity allows have passed since the bulletin's release, not a day earlier."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from tests.posture.builders import gpu_node, inputs, pod, run, tenant

RELEASED = datetime(2025, 7, 15, tzinfo=UTC)
SLA = {"critical": 7, "high": 30, "medium": 90, "low": 180}


def exposed_world(*severities: str | None):
    exposures = [
        {
            "component": "container_toolkit",
            "installed": "1.17.4",
            "fixed_version": "1.17.8",
            "severity": s,
            "advisory_id": f"adv-{s}",
            "released": RELEASED.isoformat(),
            "cves": ["CVE-2025-23266"],
        }
        for s in severities
    ]
    world = inputs(
        nodes=(gpu_node("gpu-1"),),
        pods=(pod("alpha-ns", "train", gpu={"nvidia.com/gpu": 1}),),
        tenants=(tenant("alpha", namespaces=("alpha-ns",)),),
    )
    patch = {"gpu-1": {"status": "below_baseline", "exposures": exposures, "notes": []}}
    return dataclasses.replace(world, patch=patch, patch_sla_days=dict(SLA))


@pytest.mark.parametrize(
    ("severity", "days_after", "late"),
    [
        ("critical", 7, False),  # the last day of the SLA is still inside it
        ("critical", 8, True),
        ("high", 30, False),
        ("high", 31, True),
        ("low", 179, False),
        ("low", 181, True),
        (None, 31, True),  # no severity stated: judged as high, never as low
    ],
)
def test_the_clock_starts_at_the_release_and_counts_the_severity_days(severity, days_after, late):
    moment = RELEASED + timedelta(days=days_after, hours=1 if late else -1)
    with time_machine.travel(moment, tick=False):
        drafts = run("STACK-005", exposed_world(severity))
    assert bool(drafts) is late
    if late:
        (draft,) = drafts
        (exposure,) = draft.evidence["late_exposures"]
        assert exposure["sla_days"] == SLA[severity or "high"]
        assert exposure["days_since_release"] == days_after
        assert draft.tenants == ("alpha",)


def test_only_the_exposures_past_their_own_sla_are_listed():
    with time_machine.travel(RELEASED + timedelta(days=40), tick=False):
        (draft,) = run("STACK-005", exposed_world("critical", "high", "medium"))
    late = {e["severity"] for e in draft.evidence["late_exposures"]}
    assert late == {"critical", "high"}  # medium has 90 days
    assert draft.evidence["oldest_days"] == 40


def test_a_changed_sla_moves_the_verdict():
    world = exposed_world("high")
    with time_machine.travel(RELEASED + timedelta(days=40), tick=False):
        assert run("STACK-005", world)
        relaxed = dataclasses.replace(world, patch_sla_days={**SLA, "high": 60})
        assert not run("STACK-005", relaxed)
