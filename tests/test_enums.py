"""The shared enums keep the strings the database, the API and the exports have always held."""

from __future__ import annotations

import json

import yaml

from gpuposture.base.enums import CheckScope, FindingStatus, Severity, SharingMode
from inventory.models import PatchSla
from posture.models import SEVERITY_ORDER, Finding
from posture.models import Severity as SeverityChoices
from tenants.policy import SHARING_MODES, VGPU_MODES


def test_values_are_the_stored_strings_in_rank_order():
    assert Severity.values() == ("critical", "high", "medium", "low")
    assert FindingStatus.values() == ("open", "resolved", "accepted")
    assert SharingMode.values() == (
        "exclusive",
        "mig_gi",
        "mig_ci",
        "vgpu_fixed",
        "vgpu_equal",
        "vgpu_best_effort",
        "mps",
        "time_slicing",
    )
    assert CheckScope.values() == ("tenant", "node", "gpu", "cluster", "provider")
    assert SharingMode.values() == SHARING_MODES
    assert VGPU_MODES == ("vgpu_fixed", "vgpu_equal", "vgpu_best_effort")


def test_members_are_their_strings():
    assert Severity.HIGH == "high" and f"{Severity.HIGH}" == "high" and str(Severity.HIGH) == "high"
    assert {"high": 1}[Severity.HIGH] == 1
    assert json.dumps([FindingStatus.OPEN]) == '["open"]'
    # values() are plain str, which the safe YAML dumper needs (it refuses str subclasses).
    assert yaml.safe_dump(list(SharingMode.values())).startswith("- exclusive\n")


def test_rank_puts_unknown_values_last():
    assert Severity.rank("critical") == 0 and Severity.rank("low") == 3
    assert SharingMode.rank("unknown") == len(SharingMode)


def test_model_choices_are_unchanged():
    assert SeverityChoices.choices == [(s, s) for s in ("critical", "high", "medium", "low")]
    assert Finding.Status.choices == [(s, s) for s in ("open", "resolved", "accepted")]
    assert Finding.Status.OPEN == "open"
    assert PatchSla.Severity.choices == [
        ("critical", "Critical"),
        ("high", "High"),
        ("medium", "Medium"),
        ("low", "Low"),
    ]
    assert SEVERITY_ORDER == {"critical": 0, "high": 1, "medium": 2, "low": 3}
