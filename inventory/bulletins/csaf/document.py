"""Parse a CSAF 2.0 document (already decoded from JSON) into frozen dataclasses, or refuse it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from inventory.bulletins.csaf.remedies import other_remedies, remedy_notes, vendor_fixes
from inventory.bulletins.csaf.severity import cvss_problem, product_scores, threat_impact
from inventory.bulletins.csaf.severity import score as score_of

BranchPath = tuple[tuple[str, str], ...]
VendorFix = tuple[tuple[str, ...], str]

_STATUS_FIXED = ("fixed", "first_fixed")
_STATUS_AFFECTED = ("known_affected",)  # first_ and last_affected: bounds of their own
_STATUS_ALL = (
    "known_affected",
    "first_affected",
    "last_affected",
    "fixed",
    "first_fixed",
    "known_not_affected",
    "recommended",
    "under_investigation",
)


class CsafError(ValueError):
    """A document that is not valid CSAF 2.0; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Product:
    product_id: str
    name: str
    branch_path: BranchPath
    cpe: str | None
    version_range: str | None
    purl: str | None = None
    # A relationship's product (default_component_of, installed_on, ...): the name of the
    # product it refers to, which states the version ("... as a component of Ubuntu 22.04" not).
    reference_name: str | None = None


@dataclass(frozen=True)
class Vulnerability:
    cve: str
    title: str | None
    cvss_base_score: float | None
    cvss_severity: str | None
    known_affected: tuple[str, ...]
    fixed: tuple[str, ...]
    vendor_fix: tuple[VendorFix, ...]
    release_date: str | None = None
    notes: tuple[str, ...] = ()  # texts of its notes (summary, details, ...), as published
    # product_status.last_affected: this version and those before it are affected.
    last_affected: tuple[str, ...] = ()
    # Product id -> its own highest score, where score entries name their products (a Windows
    # row may be critical and the Linux row medium); others take the overall score.
    product_scores: dict[str, tuple[float | None, str | None]] = field(default_factory=dict)
    # product_status.under_investigation: the vendor does not yet know whether they are affected.
    under_investigation: tuple[str, ...] = ()
    # product_status.known_not_affected: the vendor says these are not affected.
    known_not_affected: tuple[str, ...] = ()
    # product_status.first_affected: this version and those after it (up to a fix) are affected.
    first_affected: tuple[str, ...] = ()
    # Remediations other than vendor_fix (none_available, no_fix_planned, mitigation,
    # workaround, ...): (product ids, category, details).
    other_remedies: tuple[tuple[tuple[str, ...], str, str], ...] = ()
    # Remediations shown to the user with the fix they concern: (ids, category, details, url).
    remedies: tuple[tuple[tuple[str, ...], str, str, str], ...] = ()


@dataclass(frozen=True)
class Advisory:
    tracking_id: str
    title: str | None
    category: str
    version: str
    initial_release_date: str | None
    current_release_date: str
    aggregate_severity: str | None
    products: dict[str, Product]
    vulnerabilities: tuple[Vulnerability, ...]
    notes: tuple[str, ...] = ()  # document notes other than the legal disclaimer
    withdrawn: str | None = None  # why the advisory says it is withdrawn: it states no fixes
    status: str = "final"  # document.tracking.status: draft, interim or final
    # document.distribution.tlp.label, upper case ("WHITE", "CLEAR", "AMBER+STRICT"); None
    # when the document states none.
    tlp: str | None = None


_VERSIONS = ("2.0", "2.1")  # 2.1: scores under `metrics[].content`, csaf_withdrawn
_WITHDRAWN = re.compile(
    r"^\W*withdrawn\b|\b(?:advisory|bulletin)\s+(?:has been|is|was)\s+withdrawn\b", re.I
)


def parse_advisory(data: Any) -> Advisory:
    """Build an Advisory from a decoded CSAF document; raise CsafError saying why if invalid."""
    if not isinstance(data, Mapping):
        raise CsafError("document is not a JSON object")
    document = _mapping(data.get("document"), "document")
    if document.get("csaf_version") not in _VERSIONS:
        raise CsafError(
            f"document.csaf_version is {document.get('csaf_version')!r}, not '2.0' (or '2.1')"
        )
    tracking = _mapping(document.get("tracking"), "document.tracking")
    products = _products(data.get("product_tree", {}))
    groups = _groups(data.get("product_tree", {}))
    vulnerabilities = data.get("vulnerabilities", [])
    if not isinstance(vulnerabilities, list):
        raise CsafError("vulnerabilities is not a list")
    severity = document.get("aggregate_severity")
    return Advisory(
        tracking_id=_text(tracking, "id", "document.tracking"),
        title=document.get("title") if isinstance(document.get("title"), str) else None,
        category=_text(document, "category", "document"),
        version=_text(tracking, "version", "document.tracking"),
        initial_release_date=tracking.get("initial_release_date"),
        current_release_date=_text(tracking, "current_release_date", "document.tracking"),
        aggregate_severity=severity.get("text") if isinstance(severity, Mapping) else None,
        products=products,
        vulnerabilities=tuple(
            _vulnerability(v, index, products, groups) for index, v in enumerate(vulnerabilities)
        ),
        notes=_notes(document.get("notes")),
        withdrawn=_withdrawn(document, tracking),
        status=_tracking_status(tracking),
        tlp=_tlp(document),
    )


# "withdrawn" is not a CSAF status, but publishers write it (see _withdrawn).
_TRACKING_STATUSES = ("draft", "interim", "final", "withdrawn")


def _tracking_status(tracking: Mapping[str, Any]) -> str:
    """document.tracking.status. CSAF 2.0 requires it (a document without it fails the
    schema, as `csaf_validator` says): a document that does not say it is published is refused
    as a draft is, never read as final. A stated value outside the standard's is refused too."""
    status = tracking.get("status")
    if status is None:
        raise CsafError(
            "document.tracking.status is missing: CSAF requires it (draft, interim or final); "
            "a document that does not say it is published never sets a baseline"
        )
    if status not in _TRACKING_STATUSES:
        raise CsafError(
            f"document.tracking.status is {status!r}, not one of {', '.join(_TRACKING_STATUSES)}"
        )
    return status


def _tlp(document: Mapping[str, Any]) -> str | None:
    """The TLP label (CSAF 2.0: WHITE, GREEN, AMBER, RED; 2.1: CLEAR, GREEN, AMBER,
    AMBER+STRICT, RED), upper case without a "TLP:" prefix; None when the document states none."""
    distribution = document.get("distribution")
    tlp = distribution.get("tlp") if isinstance(distribution, Mapping) else None
    label = tlp.get("label") if isinstance(tlp, Mapping) else None
    if not isinstance(label, str) or not label.strip():
        return None
    return re.sub(r"^TLP:\s*", "", label.strip().upper())[:20]


def _withdrawn(document: Mapping[str, Any], tracking: Mapping[str, Any]) -> str | None:
    """Why the publisher withdrew the advisory, or None: CSAF 2.1's `csaf_withdrawn`, a
    tracking status or title saying so, or a document note ("This advisory has been
    withdrawn"), as 2.0 publishers write it."""
    if document.get("category") == "csaf_withdrawn" or tracking.get("status") == "withdrawn":
        return f"document says withdrawn ({document.get('category')}, {tracking.get('status')})"
    title = document.get("title")
    if isinstance(title, str) and _WITHDRAWN.search(title):
        return f"title: {title[:200]}"
    notes = document.get("notes")
    for note in notes if isinstance(notes, list) else ():
        if not isinstance(note, Mapping) or note.get("category") == "legal_disclaimer":
            continue
        for text in (note.get("title"), note.get("text")):
            if isinstance(text, str) and _WITHDRAWN.search(text):
                return f"note: {text[:200]}"
    return None


def _notes(value: Any) -> tuple[str, ...]:
    """Note texts (free text that may state conditions); a malformed note is skipped, never
    a refusal: notes are informative."""
    if not isinstance(value, list):
        return ()
    return tuple(
        note["text"]
        for note in value
        if isinstance(note, Mapping)
        and isinstance(note.get("text"), str)
        and note.get("category") != "legal_disclaimer"
    )


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise CsafError(f"{where} is missing or not an object")
    return value


def _text(container: Mapping[str, Any], key: str, where: str) -> str:
    value = container.get(key)
    if not isinstance(value, str) or not value.strip():
        raise CsafError(f"{where}.{key} is missing or empty")
    return value


# --- product tree -------------------------------------------------------------------------------


def _products(tree: Any) -> dict[str, Product]:
    tree = _mapping(tree, "product_tree")
    found: dict[str, Product] = {}
    for product in _walk(_list(tree.get("branches"), "product_tree.branches"), ()):
        _add(found, product)
    for full in _list(tree.get("full_product_names"), "product_tree.full_product_names"):
        _add(found, _product(full, (), None, "product_tree.full_product_names"))
    for relation in _list(tree.get("relationships"), "product_tree.relationships"):
        _add(found, _related(relation, found))
    return found


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise CsafError(f"{where} is not a list")
    return value


def _walk(branches: list[Any], path: BranchPath) -> Iterator[Product]:
    for branch in branches:
        branch = _mapping(branch, "product_tree branch")
        category, name = str(branch.get("category", "")), str(branch.get("name", ""))
        here = (*path, (category, name))
        if "product" in branch:
            version_range = name if category == "product_version_range" else None
            yield _product(branch["product"], here, version_range, f"branch {name!r}")
        yield from _walk(_list(branch.get("branches"), f"branch {name!r}.branches"), here)


def _product(raw: Any, path: BranchPath, version_range: str | None, where: str) -> Product:
    raw = _mapping(raw, f"{where} product")
    helper = raw.get("product_identification_helper")
    cpe = helper.get("cpe") if isinstance(helper, Mapping) else None
    purl = helper.get("purl") if isinstance(helper, Mapping) else None
    return Product(
        product_id=_text(raw, "product_id", where),
        name=_text(raw, "name", where),
        branch_path=path,
        cpe=cpe if isinstance(cpe, str) else None,
        version_range=version_range,
        purl=purl if isinstance(purl, str) else None,
    )


def _related(relation: Any, found: Mapping[str, Product]) -> Product:
    relation = _mapping(relation, "product_tree.relationships[]")
    base = found.get(str(relation.get("product_reference")))
    path = base.branch_path if base else ()
    link = (str(relation.get("category", "")), str(relation.get("relates_to_product_reference")))
    full = relation.get("full_product_name")
    related = _product(full, (*path, link), None, "product_tree.relationships[]")
    if base is None:
        return related
    # The component's own identity and version: those of the product it refers to.
    return replace(
        related,
        cpe=related.cpe or base.cpe,
        purl=related.purl or base.purl,
        version_range=base.version_range,
        reference_name=base.name,
    )


def _add(found: dict[str, Product], product: Product) -> None:
    previous = found.get(product.product_id)
    if previous is not None and previous.name != product.name:
        raise CsafError(f"product id {product.product_id!r} is defined twice with different names")
    found.setdefault(product.product_id, product)


def _groups(tree: Any) -> dict[str, tuple[str, ...]]:
    groups: dict[str, tuple[str, ...]] = {}
    for group in _list(_mapping(tree, "product_tree").get("product_groups"), "product_groups"):
        group = _mapping(group, "product_groups[]")
        groups[str(group.get("group_id"))] = tuple(_list(group.get("product_ids"), "group ids"))
    return groups


# --- vulnerabilities ----------------------------------------------------------------------------


def _vulnerability(
    raw: Any, index: int, products: Mapping[str, Product], groups: Mapping[str, tuple[str, ...]]
) -> Vulnerability:
    where = f"vulnerabilities[{index}]"
    raw = _mapping(raw, where)
    status = raw.get("product_status") or {}
    status = _mapping(status, f"{where}.product_status")
    for key in _STATUS_ALL:
        _known(_list(status.get(key), f"{where}.product_status.{key}"), products, where)
    entries = _score_entries(raw, where)
    score, severity = score_of([e.get("content", e) for e in entries])
    # No score: the vendor's own word for it (Red Hat's threats impact "Important").
    severity = severity or threat_impact(raw.get("threats"))
    return Vulnerability(
        cve=_cve(raw),
        title=raw.get("title") if isinstance(raw.get("title"), str) else None,
        cvss_base_score=score,
        cvss_severity=severity,
        known_affected=tuple(
            pid for key in _STATUS_AFFECTED for pid in _list(status.get(key), where)
        ),
        last_affected=tuple(_list(status.get("last_affected"), where)),
        under_investigation=tuple(_list(status.get("under_investigation"), where)),
        first_affected=tuple(_list(status.get("first_affected"), where)),
        known_not_affected=tuple(_list(status.get("known_not_affected"), where)),
        fixed=tuple(pid for key in _STATUS_FIXED for pid in _list(status.get(key), where)),
        vendor_fix=vendor_fixes(raw, products, groups, where),
        other_remedies=other_remedies(raw, groups),
        remedies=remedy_notes(raw, groups),
        release_date=raw.get("release_date") if isinstance(raw.get("release_date"), str) else None,
        notes=_notes(raw.get("notes")),
        product_scores=product_scores(entries),
    )


def _score_entries(raw: Mapping[str, Any], where: str) -> list[Mapping[str, Any]]:
    """The CVSS-bearing entries: CSAF 2.0 `scores[]`, CSAF 2.1 `metrics[]` (scores under
    `content`). A score breaking the CVSS schema refuses the document, naming it."""
    entries: list[Mapping[str, Any]] = []
    for index, entry in enumerate(_list(raw.get("scores"), f"{where}.scores")):
        path = f"{where}.scores[{index}]"
        entries.append(_cvss_checked(_mapping(entry, path), entry, path))
    for index, metric in enumerate(_list(raw.get("metrics"), f"{where}.metrics")):
        content = metric.get("content") if isinstance(metric, Mapping) else None
        if isinstance(content, Mapping):  # a metric without scores rates nothing
            entries.append(_cvss_checked(content, metric, f"{where}.metrics[{index}].content"))
    return entries


def _cvss_checked(
    scores: Mapping[str, Any], entry: Mapping[str, Any], path: str
) -> Mapping[str, Any]:
    if problem := cvss_problem(scores):
        raise CsafError(f"{path}.{problem}")
    return entry


def _known(ids: Iterable[Any], products: Mapping[str, Product], where: str) -> None:
    for product_id in ids:
        if product_id not in products:
            raise CsafError(f"{where} refers to product id {product_id!r}, not in the product tree")


def _cve(raw: Mapping[str, Any]) -> str:
    if isinstance(raw.get("cve"), str):
        return raw["cve"]
    ids = raw.get("ids")
    if isinstance(ids, list) and ids and isinstance(ids[0], Mapping):
        return str(ids[0].get("text", ""))
    return ""
