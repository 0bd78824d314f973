"""Bulletin writes: import CSAF advisories (a newer revision replaces an older one) and bring
every node's patch status in line with what the bulletins now say."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.utils.dateparse import parse_datetime

from gpuposture.base.safe_parse import SafeParseError, load_json
from inventory.csaf.document import CsafError, parse_advisory
from inventory.csaf.fixes import Fix, fixes
from inventory.csaf.products import Bound, Component
from inventory.csaf.versions import compare, parse_version
from inventory.models import Bulletin, BulletinFix, Node
from inventory.patching import COMPONENTS, node_patch_status

MAX_DOCUMENT_BYTES = 20 * 1024 * 1024


@dataclass
class ImportResult:
    imported: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (source, reason)

    def merge(self, other: ImportResult) -> ImportResult:
        for name in ("imported", "replaced", "unchanged", "refused"):
            getattr(self, name).extend(getattr(other, name))
        return self

    @property
    def landed(self) -> bool:
        return bool(self.imported or self.replaced or self.unchanged)


def _newer(version: str, released: str, existing: Bulletin) -> bool:
    if parse_version(version) and parse_version(existing.version):
        order = compare(version, existing.version)
        if order:
            return order > 0
    parsed = parse_datetime(released)
    return bool(parsed and parsed > existing.current_release_date)


@transaction.atomic
def bulletin_import(*, data: object, source: str, result: ImportResult) -> Bulletin | None:
    """Import one CSAF document; a refused one is recorded in `result` and changes nothing."""
    try:
        advisory = parse_advisory(data)  # type: ignore[arg-type]
        released = parse_datetime(advisory.current_release_date)
        if released is None:
            raise CsafError("document.tracking.current_release_date is not a date-time")
    except CsafError as exc:
        result.refused.append((source, getattr(exc, "reason", str(exc))))
        return None
    existing = Bulletin.objects.filter(tracking_id=advisory.tracking_id).first()
    if existing and not _newer(advisory.version, advisory.current_release_date, existing):
        result.unchanged.append(advisory.tracking_id)
        return existing
    found, unmatched = fixes(advisory)
    bulletin = existing or Bulletin(tracking_id=advisory.tracking_id)
    bulletin.title = advisory.title[:500]
    bulletin.category, bulletin.version = advisory.category[:60], advisory.version[:40]
    bulletin.initial_release_date = parse_datetime(advisory.initial_release_date or "") or None
    bulletin.current_release_date = released
    bulletin.aggregate_severity = (advisory.aggregate_severity or "")[:40]
    bulletin.cves = sorted({v.cve for v in advisory.vulnerabilities if v.cve})
    bulletin.unmatched = [
        {"product": u.product_id, "name": u.name, "reason": u.reason} for u in unmatched
    ]
    bulletin.source = source[:500]
    bulletin.save()
    bulletin.fixes.all().delete()
    BulletinFix.objects.bulk_create(_fix_row(bulletin, fix) for fix in found)
    (result.replaced if existing else result.imported).append(advisory.tracking_id)
    return bulletin


def _fix_row(bulletin: Bulletin, fix: Fix) -> BulletinFix:
    c, b = fix.component, fix.affected
    return BulletinFix(
        bulletin=bulletin, kind=c.kind, platform=c.platform or "", branch=c.branch or "",
        line=c.line or "", host=c.host or "", affected_op=b.op, affected_version=b.version,
        condition=fix.condition or b.condition or "", fixed_version=fix.fixed_version or "",
        cves=list(fix.cves), max_cvss=fix.max_cvss, severity=(fix.severity or "").lower(),
        warning=fix.warning or "",
    )  # fmt: skip


def bulletins_import_paths(*, paths: list[str], refresh: bool = True) -> ImportResult:
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
        bulletin_import_bytes(raw=raw, source=str(path), result=result)
    if refresh:
        nodes_patch_refresh()
    return result


def bulletins_import_uploads(
    *, files: list[tuple[str, bytes]], refresh: bool = True
) -> ImportResult:
    """Import uploaded documents (name, content), each on its own, then refresh patch status."""
    result = ImportResult()
    for name, raw in files:
        bulletin_import_bytes(raw=raw, source=f"upload {name}", result=result)
    if refresh:
        nodes_patch_refresh()
    return result


def bulletin_import_bytes(*, raw: bytes, source: str, result: ImportResult) -> Bulletin | None:
    """Import one document given as bytes; too large or not JSON is refused with the reason."""
    if len(raw) > MAX_DOCUMENT_BYTES:
        result.refused.append((source, f"larger than {MAX_DOCUMENT_BYTES // 1024 // 1024} MB"))
        return None
    try:
        data = load_json(raw, max_bytes=MAX_DOCUMENT_BYTES)
    except SafeParseError as exc:
        result.refused.append((source, f"not readable JSON: {exc}"))
        return None
    return bulletin_import(data=data, source=source, result=result)


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
            released=r.bulletin.current_release_date.isoformat(),
            warning=r.warning or None,
        )  # fmt: skip
        for r in rows
    ]


def nodes_patch_refresh(
    *, cluster_id: int | None = None, node_names: list[str] | None = None
) -> int:
    """Recompute patch status of the GPU nodes (of one cluster, or all; or the named nodes of
    that cluster); returns nodes changed."""
    all_fixes = fixes_from_db()
    nodes = Node.objects.filter(is_gpu_node=True)
    if cluster_id is not None:
        nodes = nodes.filter(cluster_id=cluster_id)
    if node_names is not None:
        nodes = nodes.filter(name__in=node_names)
    changed = []
    for node in nodes.only("pk", "data", "patch_status", "patch_exposures", "patch_notes"):
        versions = {field: node.data.get(field) for field in COMPONENTS}
        status = node_patch_status(versions, all_fixes)
        exposures = [e.__dict__ | {"cves": list(e.cves)} for e in status.exposures]
        values = (status.status, exposures, list(status.unknown))
        if values != (node.patch_status, node.patch_exposures, node.patch_notes):
            node.patch_status, node.patch_exposures, node.patch_notes = values
            changed.append(node)
    Node.objects.bulk_update(
        changed, ["patch_status", "patch_exposures", "patch_notes"], batch_size=500
    )
    return len(changed)
