"""The patch SLA: days from a bulletin's release to patched nodes, per severity (STACK-005).

The deployment sets defaults (settings.GPUPOSTURE_PATCH_SLA_DAYS); a security lead may change
them in the UI or API, and those choices are stored per severity."""

from __future__ import annotations

from collections.abc import Mapping

from django.conf import settings
from django.db import transaction

from gpuposture.base.rescore import rescore_request
from inventory.models import PatchSla

SEVERITIES = tuple(PatchSla.Severity.values)
MIN_DAYS, MAX_DAYS = 1, 3650


class PatchSlaError(ValueError):
    pass


def patch_sla_days() -> dict[str, int]:
    """Severity -> days, the stored choice over the deployment default."""
    days = {s: int(settings.GPUPOSTURE_PATCH_SLA_DAYS.get(s, 30)) for s in SEVERITIES}
    days.update(PatchSla.objects.values_list("severity", "days"))
    return days


def patch_sla_rows() -> list[dict]:
    """For the page and API: each severity with its days, and who changed it when."""
    stored = {row.severity: row for row in PatchSla.objects.all()}
    defaults = settings.GPUPOSTURE_PATCH_SLA_DAYS
    return [
        {
            "severity": s,
            "days": stored[s].days if s in stored else int(defaults.get(s, 30)),
            "default_days": int(defaults.get(s, 30)),
            "updated_by": stored[s].updated_by if s in stored else "",
            "updated_at": stored[s].updated_at if s in stored else None,
        }
        for s in SEVERITIES
    ]


@transaction.atomic
def patch_sla_save(*, days: Mapping[str, int], actor: str) -> dict[str, int]:
    """Store the given severities' days, then re-score so STACK-005 follows the new SLA."""
    unknown = set(days) - set(SEVERITIES)
    if unknown:
        raise PatchSlaError(f"unknown severity {sorted(unknown)[0]!r}; use {', '.join(SEVERITIES)}")
    for severity, value in days.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise PatchSlaError(f"{severity}: days must be a whole number")
        if not MIN_DAYS <= value <= MAX_DAYS:
            raise PatchSlaError(f"{severity}: days must be between {MIN_DAYS} and {MAX_DAYS}")
    current = patch_sla_days()
    changed = {s: v for s, v in days.items() if current[s] != v}
    for severity, value in changed.items():
        PatchSla.objects.update_or_create(
            severity=severity, defaults={"days": value, "updated_by": actor[:150]}
        )
    if changed:
        # After commit (rescore_request waits for it), so the score reads the new SLA.
        rescore_request(everything=True, reason="patch SLA")
    return patch_sla_days()
