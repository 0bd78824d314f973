"""Pair each affected product with its fix, per vulnerability, and group the CVEs per fix.

Anything that cannot be paired stays visible as Unmatched with a reason; nothing is guessed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from inventory.bulletins.csaf.document import Advisory, Product, Vulnerability
from inventory.bulletins.csaf.notes import note_conditions
from inventory.bulletins.csaf.products import Bound, Component, bound, branch_mismatch, classify
from inventory.bulletins.csaf.versions import compare, parse_version

Classified = tuple[Product, Component, Bound]
_Key = tuple[Component, Bound, str | None, str | None]  # + fixed version, notes' conditions


@dataclass(frozen=True)
class Fix:
    """Versions `affected` of `component` are fixed in `fixed_version` for these CVEs.

    `warning` notes contradictory upstream data that was recorded as published.
    """

    component: Component
    affected: Bound
    fixed_version: str | None
    cves: tuple[str, ...]
    max_cvss: float | None
    severity: str | None
    condition: str | None
    advisory_id: str
    released: str
    warning: str | None = None


@dataclass(frozen=True)
class Unmatched:
    product_id: str
    name: str
    reason: str


@dataclass
class _Group:
    cves: list[str]
    max_cvss: float | None
    severity: str | None


def fixes(advisory: Advisory) -> tuple[list[Fix], list[Unmatched]]:
    """All affected -> fixed pairs of an advisory, and the products that could not be paired."""
    groups: dict[_Key, _Group] = {}
    unmatched: dict[tuple[str, str], Unmatched] = {}
    for vulnerability in advisory.vulnerabilities:
        pairs, lost = _pairs(advisory, vulnerability)
        # CVEs fixed by one version may differ in the conditions their notes state.
        noted = "\n".join(note_conditions(advisory, vulnerability)) or None
        for component, affected, fixed_version in pairs:
            _add(groups, (component, affected, fixed_version, noted), vulnerability)
        for item in lost:
            unmatched.setdefault((item.product_id, item.reason), item)
    found = [_fix(key, group, advisory) for key, group in groups.items()]
    return found, list(unmatched.values())


def _pairs(
    advisory: Advisory, vulnerability: Vulnerability
) -> tuple[list[tuple[Component, Bound, str | None]], list[Unmatched]]:
    lost: list[Unmatched] = []
    affected = _classified(advisory, vulnerability.known_affected, lost)
    fixed = _classified(advisory, vulnerability.fixed, lost)
    by_component: dict[Component, list[Classified]] = {}
    for item in fixed:
        by_component.setdefault(item[1], []).append(item)
    pairs: list[tuple[Component, Bound, str | None]] = []
    paired: set[Component] = set()
    for product, component, affected_bound in affected:
        versions = sorted({b.version for _, _, b in by_component.get(component, [])})
        if len(versions) == 1:
            pairs.append((component, affected_bound, versions[0]))
            paired.add(component)
        else:
            reason = (
                "no fixed product of the same component"
                if not versions
                else (f"several fixed versions for one component: {', '.join(versions)}")
            )
            lost.append(_lost(product, reason))
    for product, component, _ in fixed:
        if component not in paired:
            lost.append(_lost(product, "fixed product without an affected product to pair"))
    return pairs, lost


def _classified(advisory: Advisory, ids: Iterable[str], lost: list[Unmatched]) -> list[Classified]:
    found: list[Classified] = []
    for product_id in ids:
        product = advisory.products[product_id]
        component, stated = classify(product), bound(product)
        if component is None:
            lost.append(_lost(product, "not a component gpuposture inventories"))
        elif stated is None:
            lost.append(_lost(product, "no version bound in the product name"))
        elif parse_version(stated.version) is None:
            lost.append(_lost(product, f"bound {stated.version!r} is not a version"))
        elif branch_mismatch(component, stated.version):
            reason = f"version {stated.version} does not belong to branch {component.branch}"
            lost.append(_lost(product, f"{reason} (upstream typo?)"))
        else:
            found.append((product, component, stated))
    return found


def _lost(product: Product, reason: str) -> Unmatched:
    return Unmatched(product.product_id, product.name, reason)


def _add(groups: dict[_Key, _Group], key: _Key, vulnerability: Vulnerability) -> None:
    group = groups.setdefault(key, _Group([], None, None))
    if vulnerability.cve not in group.cves:
        group.cves.append(vulnerability.cve)
    score = vulnerability.cvss_base_score
    if score is not None and (group.max_cvss is None or score > group.max_cvss):
        group.max_cvss, group.severity = score, vulnerability.cvss_severity


def _fix(key: _Key, group: _Group, advisory: Advisory) -> Fix:
    component, affected, fixed_version, noted = key
    return Fix(
        component=component,
        affected=affected,
        fixed_version=fixed_version,
        cves=tuple(group.cves),
        max_cvss=group.max_cvss,
        severity=group.severity,
        # One clause per line: the product name's, then the notes' (inventory.conditions).
        condition="\n".join(c for c in (affected.condition, noted) if c) or None,
        advisory_id=advisory.tracking_id,
        released=advisory.current_release_date,
        warning=_warning(affected, fixed_version),
    )


def _warning(affected: Bound, fixed_version: str | None) -> str | None:
    if fixed_version is None or affected.op == "==":
        return None
    order = compare(fixed_version, affected.version)
    if order < 0 or (order == 0 and affected.op == "<="):
        return f"affected bound {affected.op} {affected.version} includes fixed {fixed_version}"
    return None
