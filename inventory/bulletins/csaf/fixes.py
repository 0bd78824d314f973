"""Pair each affected product with its fix, per vulnerability, and group the CVEs per fix.

Anything that cannot be paired stays visible as Unmatched with a reason; nothing is guessed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cmp_to_key

from inventory.bulletins.csaf.distro import (
    backports,
    distribution_package,
    unpaired_reason,
    upstream_version,
)
from inventory.bulletins.csaf.document import Advisory, Product, Vulnerability
from inventory.bulletins.csaf.notes import note_conditions
from inventory.bulletins.csaf.products import (
    ALL_VERSIONS,
    EVERY,
    OPEN,
    Bound,
    Component,
    bound,
    branch_mismatch,
    classify,
)
from inventory.bulletins.csaf.severity import rating, worst_rating
from inventory.bulletins.csaf.versions import compare, is_below, parse_version

Classified = tuple[Product, Component, Bound]
# (component, affected bound, fixed version, pairing warning, affected product id)
_Pair = tuple[Component, Bound, str | None, str | None, str]
# + fixed version, notes' conditions, a pairing warning, why no fix is named
_Key = tuple[Component, Bound, str | None, str | None, str | None, str | None]
NO_FIX = ("none_available", "no_fix_planned")


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
    # No fixed version, and the vendor says why: "none_available: <details>" or
    # "no_fix_planned: <details>". Nothing to upgrade to, so no patch SLA runs.
    no_fix: str | None = None
    # What the vendor says to do for these products: (category, details, url) per
    # remediation (vendor_fix, mitigation, workaround, none_available, no_fix_planned).
    remedies: tuple[tuple[str, str, str], ...] = ()


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
    published: list[str] = field(default_factory=list)  # its CVEs' release dates
    remedies: list[tuple[str, str, str]] = field(default_factory=list)


def fixes(advisory: Advisory) -> tuple[list[Fix], list[Unmatched]]:
    """All affected -> fixed pairs of an advisory, and the products that could not be paired."""
    if advisory.withdrawn:
        # A withdrawn advisory states nothing: none of its products is judged by it.
        return [], [Unmatched("*", advisory.title or "", f"withdrawn: {advisory.withdrawn}")]
    groups: dict[_Key, _Group] = {}
    unmatched: dict[tuple[str, str], Unmatched] = {}
    for vulnerability in advisory.vulnerabilities:
        pairs, lost = _pairs(advisory, vulnerability)
        # CVEs fixed by one version may differ in the conditions their notes state.
        noted = "\n".join(note_conditions(advisory, vulnerability)) or None
        for component, affected, fixed_version, warning, product_id in pairs:
            no_fix = None if fixed_version else _no_fix(vulnerability, product_id)
            key = (component, affected, fixed_version, noted, warning, no_fix)
            _add(groups, key, vulnerability, product_id)
        for item in lost:
            unmatched.setdefault((item.product_id, item.reason), item)
    found = [_fix(key, group, advisory) for key, group in groups.items()]
    return found, list(unmatched.values())


def _pairs(advisory: Advisory, vulnerability: Vulnerability) -> tuple[list[_Pair], list[Unmatched]]:
    """(component, affected bound, fixed version, warning, product id) per affected product.
    An affected product is never dropped for want of a fix: its bound alone says which nodes
    are exposed (a vendor_fix remediation may be all a document gives, or backport lines).
    Nor for want of a bound: an affected product whose versions the bulletin does not bound,
    and a product under investigation, stay OPEN (the node cannot read current)."""
    lost: list[Unmatched] = []
    affected = _classified(advisory, vulnerability.known_affected, lost, open_bounds=True)
    # A last_affected version bounds every version up to it (CSAF 2.0 product_status).
    affected += [
        (product, component, replace(stated, op="<=") if stated.op == "==" else stated)
        for product, component, stated in _classified(advisory, vulnerability.last_affected, lost)
    ]
    firsts = _classified(advisory, vulnerability.first_affected, lost, open_bounds=True)
    investigating = [
        (product, component, Bound(OPEN, _reach(stated), stated.condition))
        for product, component, stated in _classified(
            advisory, vulnerability.under_investigation, lost, open_bounds=True
        )
    ]
    fixed = _classified(advisory, vulnerability.fixed, lost)
    by_component: dict[Component, list[Classified]] = {}
    for item in fixed:
        by_component.setdefault(item[1], []).append(item)
    pairs: list[_Pair] = []
    paired: set[Component] = set()
    for product, component, affected_bound in affected:
        versions = sorted({b.version for _, _, b in by_component.get(component, [])})
        paired.add(component)
        if affected_bound.op == OPEN:
            pairs.append(_open_pair(vulnerability, product, component, versions))
        elif affected_bound.op == EVERY:
            pairs.append(_every_pair(vulnerability, product, component, affected_bound, versions))
        elif len(versions) == 1:
            pairs.append((component, affected_bound, versions[0], None, product.product_id))
        elif versions:
            chosen, warning = _past_bound(affected_bound, versions)
            pairs.append((component, affected_bound, chosen, warning, product.product_id))
        else:
            remedy = _remedy(vulnerability, product)
            pairs.append((component, affected_bound, remedy, None, product.product_id))
    for product, component, first in firsts:
        versions = sorted({b.version for _, _, b in by_component.get(component, [])})
        paired.add(component)
        pairs.append((component, *_from_first(first, versions), product.product_id))
    for product, component, open_bound in investigating:
        versions = sorted({b.version for _, _, b in by_component.get(component, [])})
        paired.add(component)
        highest = max(versions, key=cmp_to_key(compare)) if versions else None
        pairs.append((component, open_bound, highest, UNDER_INVESTIGATION, product.product_id))
    for product, component, _ in fixed:
        if component not in paired:
            package = distribution_package(product)
            reason = (
                unpaired_reason(package, component.kind)
                if package
                else "fixed product without an affected product to pair"
            )
            lost.append(_lost(product, reason))
    pairs, backported = backports(pairs, fixed)
    lost += [_lost(product, reason) for product, reason in backported]
    return _spared(advisory, vulnerability, pairs), lost


def _spared(advisory: Advisory, vulnerability: Vulnerability, pairs: list[_Pair]) -> list[_Pair]:
    """Versions the vendor lists as known_not_affected inside an affected range (a VEX saying
    1.17.3 is not affected while < 1.17.8 is): excluded from the range, as a vers condition
    (`!=`), so a node running one reads not affected, `vulnerable_code_not_present`."""
    excluded: dict[Component, set[str]] = {}
    for _, component, stated in _classified(advisory, vulnerability.known_not_affected, []):
        if stated.op == "==":
            excluded.setdefault(component, set()).add(stated.version)
    if not excluded:
        return pairs
    found = []
    for component, stated, fixed_version, warning, product_id in pairs:
        versions = sorted(excluded.get(component, ()))
        if versions and stated.op in ("<", "<=", EVERY):
            spare = "vers:generic/>=0|" + "|".join(f"!={v}" for v in versions)
            condition = "\n".join(c for c in (stated.condition, spare) if c)
            stated = replace(stated, condition=condition)
        found.append((component, stated, fixed_version, warning, product_id))
    return found


UNDER_INVESTIGATION = "under investigation: the vendor does not yet say whether it is affected"
NOT_BOUNDED = "affected, but the bulletin states no version bound"


def _from_first(first: Bound, versions: list[str]) -> tuple[Bound, str | None, str | None]:
    """A first_affected version X: X and every version after it up to the lowest fixed version
    above X, kept as a vers range the node's version is judged against. With no fixed version
    above it, the bound stays OPEN (from X on, affected; how far, the bulletin does not say)."""
    if first.op == OPEN or parse_version(first.version) is None:
        return Bound(OPEN, ALL_VERSIONS), None, NOT_BOUNDED
    above = [v for v in versions if compare(v, first.version) > 0]
    if not above:
        warning = f"first affected {first.version}; no fixed version above it is named"
        return Bound(OPEN, ALL_VERSIONS), None, warning
    fixed = min(above, key=cmp_to_key(compare))
    return Bound("<", fixed, f"vers:generic/>={first.version}|<{fixed}"), fixed, None


def _every_pair(
    vulnerability: Vulnerability,
    product: Product,
    component: Component,
    every: Bound,
    versions: list[str],
) -> _Pair:
    """A range with no upper end: below its one fixed version (or the one a vendor_fix names)
    when there is one; else every version in it is affected, with no fix to move to."""
    fixed = versions[0] if len(versions) == 1 else None
    if not versions:
        fixed = _remedy(vulnerability, product)
    if fixed:
        return (component, Bound("<", fixed, every.condition), fixed, None, product.product_id)
    return (component, every, None, None, product.product_id)


def _reach(stated: Bound) -> str:
    """The highest version an under-investigation product names, or ALL_VERSIONS."""
    if stated.op == OPEN or parse_version(stated.version) is None:
        return ALL_VERSIONS
    return stated.version


def _open_pair(
    vulnerability: Vulnerability, product: Product, component: Component, versions: list[str]
) -> _Pair:
    """An affected product with no bound: below its one fixed version (the fixed product of
    the same component, else the one version a vendor_fix names) it is affected; with no
    such version it stays OPEN, judged by no version (fixed past the highest one named)."""
    remedy = versions[0] if len(versions) == 1 else None
    if not versions:
        remedy = _remedy(vulnerability, product)
    if remedy:
        warning = f"{NOT_BOUNDED}: read as every version below the fixed {remedy}"
        return (component, Bound("<", remedy), remedy, warning, product.product_id)
    highest = max(versions, key=cmp_to_key(compare)) if versions else None
    return (component, Bound(OPEN, ALL_VERSIONS), highest, NOT_BOUNDED, product.product_id)


def _past_bound(affected: Bound, versions: list[str]) -> tuple[str | None, str]:
    """Several fixed versions for one component (backport lines 1.16.3 and 1.17.8): the lowest
    one the affected bound does not cover, with a warning naming them all."""
    outside = [
        v
        for v in versions
        if affected.op == "==" or not is_below(v, affected.version, affected.op == "<=")
    ]
    chosen = min(outside, key=cmp_to_key(compare)) if outside else None
    shown = chosen or "none past the bound"
    return chosen, f"several fixed versions for one component: {', '.join(versions)} ({shown})"


_UPGRADE = re.compile(r"\b(?:upgrade|update|install|(?:fixed|resolved|patched|addressed) in)", re.I)
_NUMBER = re.compile(r"(?<![\w.])v?(\d+(?:\.\d+)+)\b")


def _remedy(vulnerability: Vulnerability, product: Product) -> str | None:
    """The version a vendor_fix remediation for this product names ("Update to version 4.2 or
    later"), when its remediations name exactly one; else None (not stated as one version:
    "GPU Operator 25.3.2, which ships Container Toolkit 1.17.8" is not guessed)."""
    named = {
        number
        for ids, details in vulnerability.vendor_fix
        if product.product_id in ids and _UPGRADE.search(details)
        for number in _NUMBER.findall(details)
    }
    return named.pop() if len(named) == 1 else None


def _classified(
    advisory: Advisory, ids: Iterable[str], lost: list[Unmatched], open_bounds: bool = False
) -> list[Classified]:
    """Each product as (product, component, bound). `open_bounds`: a component whose versions
    the product does not bound is kept with an OPEN bound (affected or under investigation:
    the vendor names it), not lost."""
    found: list[Classified] = []
    for product_id in ids:
        product = advisory.products[product_id]
        component, stated = classify(product), bound(product)
        if stated is None and (upstream := upstream_version(product)):
            stated = Bound("==", upstream)  # a package build's name: its upstream version
        if component is None:
            lost.append(_lost(product, "not a component gpuposture inventories"))
        elif open_bounds and stated is not None and stated.op == EVERY:
            found.append((product, component, stated))
        elif open_bounds and (stated is None or parse_version(stated.version) is None):
            found.append((product, component, Bound(OPEN, ALL_VERSIONS)))
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


def _add(
    groups: dict[_Key, _Group], key: _Key, vulnerability: Vulnerability, product_id: str
) -> None:
    group = groups.setdefault(key, _Group([], None, None))
    if vulnerability.cve not in group.cves:
        group.cves.append(vulnerability.cve)
    if vulnerability.release_date and _moment(vulnerability.release_date):
        group.published.append(vulnerability.release_date)
    overall = (vulnerability.cvss_base_score, vulnerability.cvss_severity)
    score, severity = vulnerability.product_scores.get(product_id, overall)
    if score is not None and (group.max_cvss is None or score > group.max_cvss):
        group.max_cvss = score
    # The worst severity of its CVEs, scored or only rated (a CVE rated critical in words is
    # not outranked by another's medium score).
    group.severity = worst_rating((group.severity, severity))
    for ids, category, details, url in vulnerability.remedies:
        remedy = (category, details, url)
        if product_id in ids and (details or url) and remedy not in group.remedies:
            group.remedies.append(remedy)


def _no_fix(vulnerability: Vulnerability, product_id: str) -> str | None:
    """Why the vendor names no fix for this product (none_available, no_fix_planned), with
    its details; None when it does not say."""
    for ids, category, details in vulnerability.other_remedies:
        if category in NO_FIX and product_id in ids:
            return f"{category}: {details}".strip().rstrip(":")[:1000]
    return None


def _fix(key: _Key, group: _Group, advisory: Advisory) -> Fix:
    component, affected, fixed_version, noted, paired, no_fix = key
    return Fix(
        component=component,
        affected=affected,
        fixed_version=fixed_version,
        cves=tuple(group.cves),
        max_cvss=group.max_cvss,
        severity=group.severity or _aggregate(advisory.aggregate_severity),
        # One clause per line: the product name's, then the notes' (inventory.conditions).
        condition="\n".join(c for c in (affected.condition, noted) if c) or None,
        advisory_id=advisory.tracking_id,
        released=_published(group, advisory),
        warning="; ".join(w for w in (paired, _warning(affected, fixed_version)) if w) or None,
        no_fix=no_fix,
        remedies=tuple(group.remedies[:20]),
    )


def _aggregate(text: str | None) -> str | None:
    """A fix whose CVEs carry no score or rating takes the document's aggregate severity, when
    it is one of ours ("Important" is high): a bulletin rated critical is not judged high by
    default. "none" is not taken from it: an aggregate never rates a fix below its CVEs."""
    rated = rating(text)
    return rated if rated != "none" else None


def _published(group: _Group, advisory: Advisory) -> str:
    """When this fix was published, where the patch SLA clock starts: its earliest CVE's
    release date, else the advisory's first release. Not the current release: a revision
    that fixes a typo weeks later does not restart the clock (nvidia-5659 v2.0.0 came four
    weeks after its critical CVE-2025-23266 and its fix)."""
    dated = [
        (moment, text)
        for text in (*group.published, advisory.initial_release_date)
        if text and (moment := _moment(text))
    ]
    # As an aware ISO date-time: a date-only release_date ("2025-07-15") reads as UTC midnight.
    return min(dated)[0].isoformat() if dated else advisory.current_release_date


def _moment(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _warning(affected: Bound, fixed_version: str | None) -> str | None:
    if fixed_version is None or affected.op not in ("<", "<="):
        return None
    order = compare(fixed_version, affected.version)
    if order < 0 or (order == 0 and affected.op == "<="):
        return f"affected bound {affected.op} {affected.version} includes fixed {fixed_version}"
    return None
