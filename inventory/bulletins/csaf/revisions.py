"""What a new revision of a bulletin changes, and whether it weakens a fix. PURE.

A bulletin is compared product by product (a product is one component of one platform, driver
branch and line: "driver linux R550 tesla"). A revision WEAKENS the bulletin when, for a
product the old revision named, the new one
- no longer names the product (a product or branch dropped),
- gives a lower fixed version, or an affected bound that reaches fewer versions,
- no longer lists a CVE for it;
or when the bulletin as a whole no longer lists a CVE. Any of these can close findings that
are still true, so such a revision waits for a security lead (inventory.bulletins.revisions).
A new product, a higher fixed version, a wider bound or a new CVE only adds exposure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from inventory.bulletins.csaf.versions import compare, parse_version


@dataclass(frozen=True)
class FixFacts:
    """One fix of a bulletin as the comparison needs it."""

    product: str
    affected_op: str  # "<", "<=" or "=="
    affected_version: str
    fixed_version: str | None
    cves: tuple[str, ...]


@dataclass(frozen=True)
class ProductFixes:
    """A product's fixes in one revision: every affected bound and fixed version, its CVEs."""

    affected: tuple[str, ...]  # ("< 550.163.01",), sorted
    fixed: tuple[str, ...]  # ("550.163.01",), sorted
    cves: tuple[str, ...]


@dataclass(frozen=True)
class RevisionState:
    version: str
    cves: tuple[str, ...]
    products: dict[str, ProductFixes]

    def as_dict(self) -> dict[str, Any]:
        """For an audit event: the revision's CVEs and each product's fixes."""
        return {
            "version": self.version,
            "cves": list(self.cves),
            "fixes": {
                name: {"affected": list(p.affected), "fixed": list(p.fixed), "cves": list(p.cves)}
                for name, p in sorted(self.products.items())
            },
        }


@dataclass(frozen=True)
class RevisionChanges:
    """What changed from one revision to the next; `weakening` says why it weakens (empty
    when it does not)."""

    fixed_versions: list[dict[str, Any]] = field(default_factory=list)
    products_added: list[str] = field(default_factory=list)
    products_dropped: list[str] = field(default_factory=list)
    cves_added: list[str] = field(default_factory=list)
    cves_dropped: list[str] = field(default_factory=list)
    weakening: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "fixed_versions": self.fixed_versions,
            "products_added": self.products_added,
            "products_dropped": self.products_dropped,
            "cves_added": self.cves_added,
            "cves_dropped": self.cves_dropped,
            "weakening": self.weakening,
        }


def product_name(kind: str, *parts: str | None) -> str:
    """ "driver linux R550 tesla", "container_toolkit": the kind and whatever narrows it."""
    return " ".join([kind, *(p for p in parts if p)])


def revision_state(version: str, cves: Iterable[str], fixes: Iterable[FixFacts]) -> RevisionState:
    grouped: dict[str, list[FixFacts]] = {}
    for fix in fixes:
        grouped.setdefault(fix.product, []).append(fix)
    products = {
        name: ProductFixes(
            affected=tuple(sorted({f"{f.affected_op} {f.affected_version}" for f in rows})),
            fixed=tuple(sorted({f.fixed_version for f in rows if f.fixed_version})),
            cves=tuple(sorted({c for f in rows for c in f.cves})),
        )
        for name, rows in grouped.items()
    }
    return RevisionState(version=version, cves=tuple(sorted(set(cves))), products=products)


EMPTY = RevisionState(version="", cves=(), products={})


def revision_changes(before: RevisionState | None, after: RevisionState | None) -> RevisionChanges:
    """From `before` (None: a new bulletin) to `after` (None: the bulletin deleted)."""
    old, new = before or EMPTY, after or EMPTY
    added = sorted(set(new.products) - set(old.products))
    dropped = sorted(set(old.products) - set(new.products))
    weakening = [f"{name}: no longer in the bulletin" for name in dropped]
    fixed_versions = []
    for name in sorted(set(old.products) & set(new.products)):
        was, now = old.products[name], new.products[name]
        if (was.affected, was.fixed) != (now.affected, now.fixed):
            fixed_versions.append(
                {
                    "product": name,
                    "before": ", ".join(was.fixed) or None,
                    "after": ", ".join(now.fixed) or None,
                    "affected_before": ", ".join(was.affected),
                    "affected_after": ", ".join(now.affected),
                }
            )
        weakening += _product_weakening(name, was, now)
    cves_dropped = sorted(set(old.cves) - set(new.cves))
    if before is not None:
        weakening += [f"{cve}: no longer in the bulletin" for cve in cves_dropped]
    return RevisionChanges(
        fixed_versions=fixed_versions,
        products_added=added,
        products_dropped=dropped,
        cves_added=sorted(set(new.cves) - set(old.cves)),
        cves_dropped=cves_dropped,
        weakening=weakening,
    )


def _product_weakening(name: str, was: ProductFixes, now: ProductFixes) -> list[str]:
    reasons = []
    was_fixed, now_fixed = _highest(was.fixed), _highest(now.fixed)
    if was_fixed and now_fixed and compare(now_fixed, was_fixed) < 0:
        reasons.append(f"{name}: fixed version lowered from {was_fixed} to {now_fixed}")
    was_reach, now_reach = _reach(was.affected), _reach(now.affected)
    if was_reach and now_reach and _bound_order(now_reach, was_reach) < 0:
        narrowed = f"{' '.join(was_reach)} to {' '.join(now_reach)}"
        reasons.append(f"{name}: affected versions narrowed from {narrowed}")
    elif was_reach and not now_reach:
        reasons.append(f"{name}: no affected version bound any more")
    gone = sorted(set(was.cves) - set(now.cves))
    if gone:
        reasons.append(f"{name}: {', '.join(gone)} no longer listed")
    return reasons


def _highest(versions: Iterable[str]) -> str | None:
    best = None
    for version in versions:
        if parse_version(version) and (best is None or compare(version, best) > 0):
            best = version
    return best


def _reach(bounds: Iterable[str]) -> tuple[str, str] | None:
    """The widest upper bound ("<=", "1.16.1") of a product's affected bounds, or None."""
    best: tuple[str, str] | None = None
    for text in bounds:
        op, _, version = text.partition(" ")
        if op not in ("<", "<=") or not parse_version(version):
            continue
        if best is None or _bound_order((op, version), best) > 0:
            best = (op, version)
    return best


def _bound_order(a: tuple[str, str], b: tuple[str, str]) -> int:
    """-1, 0, 1 as bound a reaches fewer, the same or more versions than b ("<= v" > "< v")."""
    order = compare(a[1], b[1])
    if order:
        return order
    return (a[0] == "<=") - (b[0] == "<=")
