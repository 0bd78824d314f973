"""Check modules are filed by family (issue 17 item 15): a check's code lives in the package of
its prefix, so a newcomer finds POD-003 under posture/rules/pod/, and no overflow modules."""

from __future__ import annotations

from pathlib import Path

from posture.rules import CHECKS

RULES = Path(__file__).resolve().parents[2] / "posture" / "rules"


def test_every_check_lives_in_its_family_package():
    for check_id, check in CHECKS.items():
        family = check_id.split("-")[0].lower()
        assert check.evaluate.__module__.startswith(f"posture.rules.{family}."), (
            check_id,
            check.evaluate.__module__,
        )


def test_no_overflow_modules():
    assert not list(RULES.rglob("*_extra.py"))
