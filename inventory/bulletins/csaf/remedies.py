"""The remediations of a CSAF vulnerability: vendor fixes (the products they name, group ids
expanded) and the others (none_available, no_fix_planned, mitigation, workaround)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from inventory.bulletins.csaf.document import Product, VendorFix


def other_remedies(
    raw: Mapping[str, Any], groups: Mapping[str, tuple[str, ...]]
) -> tuple[tuple[tuple[str, ...], str, str], ...]:
    """Remediations that are not a vendor fix, with the products they name (group ids
    expanded); a malformed one is skipped: vendor_fix alone decides what is fixed."""
    found = []
    remedies = raw.get("remediations")
    for remedy in remedies if isinstance(remedies, list) else ():
        if not isinstance(remedy, Mapping) or remedy.get("category") == "vendor_fix":
            continue
        ids = [i for i in remedy.get("product_ids") or () if isinstance(i, str)]
        for group_id in remedy.get("group_ids") or ():
            ids.extend(groups.get(str(group_id), ()))
        details = remedy.get("details")
        text = details if isinstance(details, str) else ""
        found.append((tuple(ids), str(remedy.get("category", "")), text))
    return tuple(found)


def vendor_fixes(
    raw: Mapping[str, Any],
    products: Mapping[str, Product],
    groups: Mapping[str, tuple[str, ...]],
    where: str,
) -> tuple[VendorFix, ...]:
    from inventory.bulletins.csaf.document import _known, _list, _mapping

    fixes: list[VendorFix] = []
    for remedy in _list(raw.get("remediations"), f"{where}.remediations"):
        remedy = _mapping(remedy, f"{where}.remediations[]")
        if remedy.get("category") != "vendor_fix":
            continue
        ids = list(_list(remedy.get("product_ids"), where))
        for group_id in _list(remedy.get("group_ids"), where):
            ids.extend(groups.get(group_id, ()))
        _known(ids, products, f"{where}.remediations")
        fixes.append((tuple(ids), str(remedy.get("details", ""))))
    return tuple(fixes)


# Remediations a user acts on besides upgrading, shown with the fix they concern.
SHOWN = ("vendor_fix", "mitigation", "workaround", "none_available", "no_fix_planned")
Remedy = tuple[tuple[str, ...], str, str, str]  # (product ids, category, details, url)


def remedy_notes(
    raw: Mapping[str, Any], groups: Mapping[str, tuple[str, ...]]
) -> tuple[Remedy, ...]:
    """Every remediation of a shown category with its details and URL (the products it
    names, group ids expanded); a malformed one is skipped: these are shown, not judged."""
    found = []
    remedies = raw.get("remediations")
    for remedy in remedies if isinstance(remedies, list) else ():
        if not isinstance(remedy, Mapping) or remedy.get("category") not in SHOWN:
            continue
        ids = [i for i in remedy.get("product_ids") or () if isinstance(i, str)]
        for group_id in remedy.get("group_ids") or ():
            ids.extend(groups.get(str(group_id), ()))
        details, url = remedy.get("details"), remedy.get("url")
        found.append(
            (
                tuple(ids),
                str(remedy["category"]),
                details[:2000] if isinstance(details, str) else "",
                url[:500]
                if isinstance(url, str) and url.startswith(("https://", "http://"))
                else "",
            )
        )
    return tuple(found)
