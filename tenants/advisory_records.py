"""What a tenant viewer reads of a record of an advisory they may not read (its TLP): the same
keys, with what names or identifies the advisory emptied. PURE (tenants.redaction's rule)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HIDDEN_ADVISORY = "(an advisory you may not read)"
# What a record of a hidden advisory keeps empty: what names or identifies the advisory.
_ADVISORY_KEYS = {
    "advisory_id": HIDDEN_ADVISORY,
    "cves": [],
    "max_cvss": None,
    "title": None,
    "remedies": [],  # the vendor's remediation texts and URLs
}
# The vendor's words: a condition, a remediation's details and URL, and a reason that quotes
# a condition (the reason keeps its code).
_ADVISORY_TEXT = ("condition", "reason", "details", "url")
# A reason in our own words, naming nothing of the advisory: kept whole.
_OWN_REASONS = frozenset({"component_not_present"})


def hidden_advisory_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """A record (exposure, not-affected, late exposure) of an advisory the viewer may not
    read: the same keys, with what identifies the advisory emptied."""
    out = dict(record)
    for key, empty in _ADVISORY_KEYS.items():
        if key in out:
            out[key] = empty
    for key in _ADVISORY_TEXT:
        if key in out and out[key]:
            out[key] = None
    no_fix = record.get("no_fix")
    if isinstance(no_fix, str) and no_fix:
        # That no fix exists is the node's to know; the vendor's details are not.
        out["no_fix"] = no_fix.split(":", 1)[0]
    reason = record.get("reason")
    if isinstance(reason, Mapping) and reason.get("code") in _OWN_REASONS:
        out["reason"] = reason
    elif isinstance(reason, Mapping) and reason.get("code"):
        out["reason"] = {**reason, "text": f"{HIDDEN_ADVISORY}: its condition is not shown"}
    return out
