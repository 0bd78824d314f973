"""The two sha256 digests a stored finding is matched by (DESIGN §5): its fingerprint, the
identity of its cause (which row a check's draft is), and its evidence digest (whether that
row's evidence changed). posture.finding_store computes both for every draft of a score.

PURE: no ORM."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from posture.rules import FindingDraft


def finding_fingerprint(cluster: str, draft: FindingDraft) -> str:
    """sha256 of the cause's identity: check, cluster, subject and key, no tenant (DESIGN §5).
    Migration posture.0005 holds a frozen copy: keep the two equal."""
    subject = (draft.subject_kind, draft.subject_namespace, draft.subject_name, draft.key)
    return subject_fingerprint(cluster, draft.check_id, subject)


def subject_fingerprint(cluster: str, check_id: str, subject: tuple[str, str, str, str]) -> str:
    """finding_fingerprint of a subject (kind, namespace, name, key) of a check."""
    identity = "|".join((check_id, cluster, *subject))
    return hashlib.sha256(identity.encode()).hexdigest()


def evidence_digest(evidence: Any) -> str:
    """sha256 of the evidence as canonical JSON (Finding.evidence_digest): a tuple and a list,
    or two orders of the same keys, are the same evidence, as they read back once stored."""
    return evidence_text(evidence)[1]


# What json.dumps(evidence, sort_keys=True) writes, from one encoder made once; without the
# circular-reference check (drafts are trees), which was a fifth of encoding 26,000 findings.
_SORTED = json.JSONEncoder(sort_keys=True, check_circular=False)
_AS_GIVEN = json.JSONEncoder(check_circular=False)


def evidence_text(evidence: Any) -> tuple[str, str]:
    """(the evidence as canonical JSON, its sha256): the text is also what is stored, so each
    new or changed finding's evidence is encoded once, not once to store and again to digest
    (PostgreSQL's jsonb keeps no key order either)."""
    try:
        text = _SORTED.encode(evidence)
    except TypeError:  # keys of mixed types cannot be sorted; the draft's own order then
        text = _AS_GIVEN.encode(evidence)
    return text, hashlib.sha256(text.encode()).hexdigest()
