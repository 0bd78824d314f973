"""Bulletin writes: import CSAF advisories (a newer revision replaces an older one) and bring
every node's patch status in line with what the bulletins now say."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from django.db import transaction
from django.utils.dateparse import parse_datetime

from audit.services import CREATE, audit_record
from gpuposture.base.safe_parse import SafeParseError, load_json
from inventory.bulk import rows_update
from inventory.bulletins.csaf.document import Advisory, CsafError, parse_advisory
from inventory.bulletins.csaf.fixes import Fix, fixes
from inventory.bulletins.csaf.products import Bound, Component
from inventory.bulletins.csaf.revisions import RevisionChanges, RevisionState, revision_changes
from inventory.bulletins.csaf.versions import compare, parse_version
from inventory.bulletins.published import RowKey, fix_published, published_before
from inventory.bulletins.revisions import (
    ImportOptions,
    advisory_state,
    audit_state,
    bulletin_state,
    change_entry,
    revision_hold,
    revisions_supersede,
    was_rejected,
)
from inventory.models import Bulletin, BulletinFix, ClusterObject, Node
from inventory.patching.driver_family import vgpu_host
from inventory.patching.no_gpu import no_gpu_patch
from inventory.patching.status import (
    COMPONENTS,
    REMEDY_KEYS,
    Exposure,
    NodeStack,
    PatchStatus,
    node_patch_status,
    remedy_dicts,
)
from inventory.runtime import node_facts, operator_toolkit, resolved_strategy

MAX_DOCUMENT_BYTES = 20 * 1024 * 1024
DRAFT_REFUSED = (
    "{id}: document.tracking.status is 'draft': a draft is not a published advisory and "
    "never sets a baseline; import the publisher's interim or final revision"
)
DEFAULTS = ImportOptions()


@dataclass
class ImportResult:
    imported: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)  # weakening revisions awaiting confirmation
    refused: list[tuple[str, str]] = field(default_factory=list)  # (source, reason)
    changes: list[dict] = field(default_factory=list)  # bulletin_revisions.change_entry

    def merge(self, other: ImportResult) -> ImportResult:
        for name in ("imported", "replaced", "unchanged", "held", "refused", "changes"):
            getattr(self, name).extend(getattr(other, name))
        return self

    @property
    def landed(self) -> bool:
        return bool(self.imported or self.replaced or self.unchanged or self.held)


def _newer(version: str, released: str, existing: Bulletin) -> bool:
    if parse_version(version) and parse_version(existing.version):
        order = compare(version, existing.version)
        if order:
            return order > 0
    parsed = parse_datetime(released)
    return bool(parsed and parsed > existing.current_release_date)


@transaction.atomic
def bulletin_import(
    *, data: object, source: str, result: ImportResult, options: ImportOptions = DEFAULTS
) -> Bulletin | None:
    """Import one CSAF document; a refused one is recorded in `result` and changes nothing.
    A newer revision that weakens a fix is held (bulletin_revisions.revision_hold) unless
    `options.confirm_weakening`; every change is an audit event."""
    try:
        advisory = parse_advisory(data)
        released = parse_datetime(advisory.current_release_date)
        if released is None:
            raise CsafError("document.tracking.current_release_date is not a date-time")
    except CsafError as exc:
        result.refused.append((source, getattr(exc, "reason", str(exc))))
        return None
    if advisory.status == "draft":
        result.refused.append((source, DRAFT_REFUSED.format(id=advisory.tracking_id)))
        return None
    existing = Bulletin.objects.filter(tracking_id=advisory.tracking_id).first()
    if existing and (
        not _newer(advisory.version, advisory.current_release_date, existing)
        or was_rejected(existing.tracking_id, advisory.version)
    ):
        marking = {"tlp": advisory.tlp or "", "tracking_status": advisory.status[:10]}
        if any(getattr(existing, k) != v for k, v in marking.items()):
            # Stored before the marking was recorded, or re-marked by the publisher (TLP, an
            # interim revision republished as final): the document's own marking holds.
            for key, value in marking.items():
                setattr(existing, key, value)
            existing.save(update_fields=list(marking))
        result.unchanged.append(advisory.tracking_id)
        return existing
    found, unmatched = fixes(advisory)
    before = bulletin_state(existing) if existing else None
    after = advisory_state(advisory, found)
    changes = revision_changes(before, after)
    if existing and changes.weakening and not options.confirm_weakening:
        revision = revision_hold(
            bulletin=existing,
            advisory=advisory,
            data=data,
            source=source,
            after=after,
            changes=changes,
            options=options,
        )
        result.held.append(advisory.tracking_id)
        entry = change_entry(advisory.tracking_id, "held", before, after, changes)
        result.changes.append(entry | {"revision": revision.pk})
        return existing
    bulletin = _store(existing, advisory, found, unmatched, released, source)
    outcome = "replaced" if existing else "imported"
    (result.replaced if existing else result.imported).append(advisory.tracking_id)
    result.changes.append(change_entry(advisory.tracking_id, outcome, before, after, changes))
    _audit_stored(bulletin, before, after, changes, options)
    return bulletin


def _store(
    existing: Bulletin | None,
    advisory: Advisory,
    found: list[Fix],
    unmatched: list,
    released: datetime,
    source: str,
) -> Bulletin:
    bulletin = existing or Bulletin(tracking_id=advisory.tracking_id)
    bulletin.title = (advisory.title or "")[:500]  # CSAF requires one; its lack loses no fix
    bulletin.category, bulletin.version = advisory.category[:60], advisory.version[:40]
    bulletin.initial_release_date = parse_datetime(advisory.initial_release_date or "") or None
    bulletin.current_release_date = released
    bulletin.aggregate_severity = (advisory.aggregate_severity or "")[:40]
    bulletin.cves = sorted({v.cve for v in advisory.vulnerabilities if v.cve})
    bulletin.unmatched = [
        {"product": u.product_id, "name": u.name, "reason": u.reason} for u in unmatched
    ]
    bulletin.source = source[:500]
    bulletin.tracking_status = advisory.status[:10]
    bulletin.tlp = advisory.tlp or ""
    bulletin.save()
    known = published_before(bulletin) if existing else None
    bulletin.fixes.all().delete()
    BulletinFix.objects.bulk_create(_fix_row(bulletin, fix, known, released) for fix in found)
    # A pending hold compared itself with the revision just replaced: it no longer applies.
    revisions_supersede(tracking_id=bulletin.tracking_id)
    return bulletin


def _audit_stored(
    bulletin: Bulletin,
    before: RevisionState | None,
    after: RevisionState,
    changes: RevisionChanges,
    options: ImportOptions,
) -> None:
    record = options.record
    state = audit_state(bulletin.tracking_id, bulletin.title, after)
    state["import"] = record.pk if record else None
    if changes.weakening:
        state["weakening_confirmed"] = changes.weakening
    old = audit_state(bulletin.tracking_id, bulletin.title, before) if before else None
    action = "replace" if before else CREATE
    audit_record(actor=options.actor, action=action, obj=bulletin, before=old, after=state)


def _fix_row(
    bulletin: Bulletin,
    fix: Fix,
    known: dict[RowKey, datetime | None] | None = None,
    revision: datetime | None = None,
) -> BulletinFix:
    c, b = fix.component, fix.affected
    return BulletinFix(
        released=fix_published(fix, known, revision or bulletin.current_release_date),
        bulletin=bulletin,
        kind=c.kind,
        platform=c.platform or "",
        branch=c.branch or "",
        line=c.line or "",
        host=c.host or "",
        affected_op=b.op,
        affected_version=b.version,
        condition=fix.condition or b.condition or "",
        fixed_version=fix.fixed_version or "",
        cves=list(fix.cves),
        max_cvss=fix.max_cvss,
        severity=(fix.severity or "").lower(),
        warning=fix.warning or "",
        no_fix=fix.no_fix or "",
        remedies=remedy_dicts(fix.remedies),
    )


def bulletins_import_paths(
    *, paths: list[str], refresh: bool = True, options: ImportOptions = DEFAULTS
) -> ImportResult:
    """Import files and directories of CSAF JSON; each document on its own (a refused one
    never stops the others)."""
    result = ImportResult()
    for path in _documents(paths, result):
        try:
            if path.stat().st_size > MAX_DOCUMENT_BYTES:
                raise ValueError(f"larger than {MAX_DOCUMENT_BYTES // 1024 // 1024} MB")
            raw = path.read_bytes()
        except (OSError, ValueError) as exc:
            result.refused.append((str(path), f"not readable: {exc}"))
            continue
        bulletin_import_bytes(raw=raw, source=str(path), result=result, options=options)
    if refresh:
        nodes_patch_refresh()
    return result


def bulletins_import_uploads(
    *, files: list[tuple[str, bytes]], refresh: bool = True, options: ImportOptions = DEFAULTS
) -> ImportResult:
    """Import uploaded documents (name, content), each on its own, then refresh patch status."""
    result = ImportResult()
    for name, raw in files:
        bulletin_import_bytes(raw=raw, source=f"upload {name}", result=result, options=options)
    if refresh:
        nodes_patch_refresh()
    return result


def bulletin_import_bytes(
    *, raw: bytes, source: str, result: ImportResult, options: ImportOptions = DEFAULTS
) -> Bulletin | None:
    """Import one document given as bytes; too large or not JSON is refused with the reason."""
    if len(raw) > MAX_DOCUMENT_BYTES:
        result.refused.append((source, f"larger than {MAX_DOCUMENT_BYTES // 1024 // 1024} MB"))
        return None
    try:
        data = load_json(raw, max_bytes=MAX_DOCUMENT_BYTES)
    except SafeParseError as exc:
        result.refused.append((source, f"not readable JSON: {exc}"))
        return None
    return bulletin_import(data=data, source=source, result=result, options=options)


def _documents(paths: list[str], result: ImportResult) -> list[Path]:
    found: list[Path] = []
    for text in paths:
        path = Path(text)
        if path.is_dir():
            found += sorted(p for p in path.iterdir() if p.suffix == ".json" and p.is_file())
        elif path.is_file():
            found.append(path)
        else:
            result.refused.append((text, "no such file or directory"))
    return found


def fixes_from_db() -> list[Fix]:
    rows = BulletinFix.objects.select_related("bulletin").order_by("id")
    return [
        Fix(
            component=Component(
                r.kind, r.platform or None, r.branch or None, r.line or None, r.host or None
            ),
            affected=Bound(r.affected_op, r.affected_version, r.condition or None),
            fixed_version=r.fixed_version or None,
            cves=tuple(r.cves),
            max_cvss=r.max_cvss,
            severity=r.severity or None,
            condition=r.condition or None,
            advisory_id=r.bulletin.tracking_id,
            # Rows stored before `released` was recorded: the advisory's first release.
            released=(
                r.released or r.bulletin.initial_release_date or r.bulletin.current_release_date
            ).isoformat(),
            warning=r.warning or None,
            no_fix=r.no_fix or None,
            remedies=tuple(
                tuple(str(item.get(k) or "") for k in REMEDY_KEYS)
                for item in r.remedies or ()
                if isinstance(item, dict)
            ),
        )
        for r in rows
    ]


@transaction.atomic  # one transaction: on SQLite each UPDATE alone is a commit of its own
def nodes_patch_refresh(
    *, cluster_id: int | None = None, node_names: list[str] | None = None
) -> int:
    """Recompute patch status of the nodes (of one cluster, or all; or the named nodes of
    that cluster): the GPU nodes' against the bulletins, the others' from what says whether
    they hold GPUs (inventory.patching.no_gpu); returns nodes changed."""
    all_fixes = fixes_from_db()
    nodes = Node.objects.all()
    if cluster_id is not None:
        nodes = nodes.filter(cluster_id=cluster_id)
    if node_names is not None:
        nodes = nodes.filter(name__in=node_names)
    nodes = list(nodes.only("pk", "cluster_id", "is_gpu_node", "labels", "data", *PATCH_FIELDS))
    runtime = _runtime_inputs({n.cluster_id for n in nodes if n.is_gpu_node})
    changed = []
    for node in nodes:
        if not node.is_gpu_node:
            values = no_gpu_patch(node.data)
        else:
            versions = {field: node.data.get(field) for field in COMPONENTS}
            status = node_patch_status(versions, all_fixes, _node_stack(node, runtime))
            values = (
                status.status,
                _dicts(status.exposures),
                list(status.unknown),
                _dicts(status.not_affected),
                list(status.unknown_components),
            )
        if values != tuple(getattr(node, f) for f in PATCH_FIELDS):
            status_text, *lists = values
            changed.append((node.pk, status_text, *(json.dumps(v) for v in lists)))
    # Plain rows, not bulk_update: its CASE WHEN per row was 3.1 of 3.3 s for 2,000 nodes.
    rows_update(Node, PATCH_FIELDS, changed)
    return len(changed)


def nodes_patch_judged(*, nodes: list[Node]) -> list[tuple[Node, PatchStatus]]:
    """Each node's patch judgement now, by the same function and inputs nodes_patch_refresh
    stores from, for a reader that needs more than is stored (a VEX states the fixed versions
    too). `nodes`: with `cluster_id`, `labels` and `data` loaded. Three queries."""
    all_fixes = fixes_from_db()
    runtime = _runtime_inputs({n.cluster_id for n in nodes})
    return [
        (
            node,
            node_patch_status(
                {field: node.data.get(field) for field in COMPONENTS},
                all_fixes,
                _node_stack(node, runtime),
            ),
        )
        for node in nodes
    ]


PATCH_FIELDS = (
    "patch_status",
    "patch_exposures",
    "patch_notes",
    "patch_not_affected",
    "patch_unknown",
)


def _dicts(exposures: tuple[Exposure, ...]) -> list[dict]:
    return [
        e.__dict__ | {"cves": list(e.cves), "remedies": remedy_dicts(e.remedies)} for e in exposures
    ]


def _runtime_inputs(cluster_ids: set[int]) -> dict[int, tuple[list, list]]:
    """cluster id -> (ClusterPolicies as (name, spec), sharing configs): what the device
    injection facts of its nodes are read from (inventory.runtime), in one query."""
    found: dict[int, tuple[list, list]] = {pk: ([], []) for pk in cluster_ids}
    rows = ClusterObject.objects.filter(
        cluster_id__in=cluster_ids, kind__in=("gpu_operator_policy", "sharing_config")
    ).values_list("cluster_id", "kind", "name", "data")
    for cluster_id, kind, name, data in rows:
        policies, configs = found[cluster_id]
        if kind == "sharing_config":
            configs.append(data)
        else:
            policies.append((name, data.get("spec") or {}))
    return found


def _node_stack(node: Node, runtime: dict[int, tuple[list, list]]) -> NodeStack:
    policies, configs = runtime.get(node.cluster_id, ([], []))
    data = node.data
    return NodeStack(
        not_installed=frozenset(data.get("not_installed") or ()),
        gpu_model=data.get("gpu_model") or None,
        vgpu_host=vgpu_host(node.labels, data.get("driver_version_source")),
        facts=node_facts(
            node.labels,
            policies,
            configs,
            data.get("sharing_strategy"),
            data.get("gpu_operator_version"),
            resolved_strategy(data),
            operator_toolkit(data),
        ),
    )
