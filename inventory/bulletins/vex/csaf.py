"""A CSAF 2.0 VEX document (profile `csaf_vex`) from a cluster's VEX statements. PURE.

The product tree names each node component once (its purl as the identification helper);
each vulnerability lists its products by status (known_affected / fixed / known_not_affected
/ under_investigation), a flag with the standard justification label for every not-affected
product and a threat of category `impact` saying why (for every product under investigation
too: why it is not known), and a `vendor_fix` remediation for
every affected one: the profile's mandatory tests 6.1.27.9 and 6.1.27.10
(tests/inventory/test_vex.py runs a maintained CSAF VEX verifier over it)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

from inventory.bulletins.vex.statements import (
    AFFECTED,
    FIXED,
    INTERIM,
    NOT_AFFECTED,
    UNDER_INVESTIGATION,
    Product,
    Statement,
)

_CVE = re.compile(r"^CVE-[0-9]{4}-[0-9]{4,}$")
_STATUS_LIST = {
    AFFECTED: "known_affected",
    FIXED: "fixed",
    NOT_AFFECTED: "known_not_affected",
    UNDER_INVESTIGATION: "under_investigation",
}
PUBLISHER_NAMESPACE = "https://github.com/gpuposture/gpuposture"


def csaf_document(
    cluster: str, statements: Sequence[Statement], *, now: datetime, namespace: str = ""
) -> dict[str, object]:
    """`namespace`: the publisher's URL (the instance the document came from)."""
    when = _iso(now)
    products = {s.product.id: s.product for s in statements}
    return {
        "document": {
            "category": "csaf_vex",
            "csaf_version": "2.0",
            "lang": "en",
            "title": f"GPU host stack VEX for cluster {cluster}",
            "publisher": {
                "category": "user",
                "name": "gpuposture",
                "namespace": namespace or PUBLISHER_NAMESPACE,
            },
            "notes": [
                {
                    "category": "summary",
                    "title": "What this document states",
                    "text": (
                        f"For each vulnerability an imported vendor bulletin names and each GPU "
                        f"node component of cluster {cluster} it concerns: affected (with the "
                        "upgrade), fixed, not affected with the reason (a component not "
                        "installed, or a bulletin condition such as CDI mode that does not "
                        "hold on the node), or under investigation with why it is not known "
                        "(such as a version that was not read on the node)."
                    ),
                }
            ],
            "tracking": {
                "id": f"gpuposture-vex-{_id_part(cluster)}-{now.strftime('%Y%m%dT%H%M%SZ')}",
                "status": "final",
                "version": "1",
                "initial_release_date": when,
                "current_release_date": when,
                "revision_history": [
                    {"date": when, "number": "1", "summary": "Generated from the inventory."}
                ],
                "generator": {"engine": {"name": "gpuposture"}, "date": when},
            },
        },
        "product_tree": {"full_product_names": [_product(p) for p in products.values()]},
        "vulnerabilities": _vulnerabilities(statements),
    }


def _product(product: Product) -> dict[str, object]:
    return {
        "name": product.label,
        "product_id": product.id,
        "product_identification_helper": {"purl": product.purl},
    }


def _vulnerabilities(statements: Sequence[Statement]) -> list[dict[str, object]]:
    by_name: dict[str, list[Statement]] = {}
    for statement in statements:
        by_name.setdefault(statement.vulnerability, []).append(statement)
    return [_vulnerability(name, group) for name, group in sorted(by_name.items())]


def _vulnerability(name: str, group: list[Statement]) -> dict[str, object]:
    out: dict[str, object] = {}
    advisories = sorted({s.advisory_id for s in group})
    if _CVE.match(name):
        out["cve"] = name
    out["ids"] = [{"system_name": "vendor security bulletin", "text": a} for a in advisories]
    out["notes"] = [
        {
            "category": "description",
            "title": "Source",
            "text": f"{name} as named by {', '.join(advisories)}.",
        }
    ]
    status: dict[str, list[str]] = {}
    for s in group:
        status.setdefault(_STATUS_LIST[s.status], []).append(s.product.id)
    out["product_status"] = status
    flags = _grouped(group, NOT_AFFECTED, lambda s: s.justification or "")
    if flags:
        out["flags"] = [{"label": label, "product_ids": ids} for label, ids in flags]
    # Why each not-affected product is not, and why each under investigation is not known
    # (a version not read on the node, a bulletin that says both): an `impact` threat each.
    impacts = _grouped(group, NOT_AFFECTED, lambda s: s.impact or "") + _grouped(
        group, UNDER_INVESTIGATION, lambda s: s.impact or ""
    )
    if impacts:
        out["threats"] = [
            {"category": "impact", "details": text, "product_ids": ids} for text, ids in impacts
        ]
    fixes = _grouped(group, AFFECTED, lambda s: f"{_fix_category(s)}\n{s.action or ''}")
    if fixes:
        out["remediations"] = [
            {
                "category": key.split("\n", 1)[0],
                "details": key.split("\n", 1)[1],
                "product_ids": ids,
            }
            for key, ids in fixes
        ] + _interim_remedies(group)
    return out


def _fix_category(statement: Statement) -> str:
    """`vendor_fix` only where a fixed version is named; else what the bulletin says
    (`no_fix_planned`, `none_available`), and `none_available` when it names no fix at all:
    a VEX does not promise a fix the vendor has not published."""
    if statement.fixed_version:
        return "vendor_fix"
    said = {category for category, _, _ in statement.remedies}
    return "no_fix_planned" if "no_fix_planned" in said else "none_available"


def _interim_remedies(group: list[Statement]) -> list[dict[str, Any]]:
    """The bulletins' mitigations and workarounds for the affected products, in their words
    and with their URLs, as CSAF remediations of the same category."""
    found: dict[tuple[str, str, str], list[str]] = {}
    for s in group:
        if s.status != AFFECTED:
            continue
        for category, details, url in s.remedies:
            if category in INTERIM and (details or url):
                found.setdefault((category, details, url), []).append(s.product.id)
    out = []
    for (category, details, url), ids in sorted(found.items()):
        remedy: dict[str, Any] = {
            "category": category,
            "details": details or f"See {url}",
            "product_ids": sorted(set(ids)),
        }
        if url:
            remedy["url"] = url
        out.append(remedy)
    return out


def _grouped(
    group: list[Statement], status: str, key: Callable[[Statement], str]
) -> list[tuple[str, list[str]]]:
    """(text, product ids) for the statements of `status`, one entry per distinct text."""
    found: dict[str, list[str]] = {}
    for s in group:
        if s.status == status:
            found.setdefault(key(s), []).append(s.product.id)
    return sorted(found.items())


def _id_part(text: str) -> str:
    return quote(text, safe="")[:80] or "cluster"


def _iso(when: datetime) -> str:
    return when.isoformat(timespec="seconds").replace("+00:00", "Z")
