"""apply_tenants FILE: create or update tenants from a declarative YAML file (DESIGN §9).

It lives in inventory because it also re-attributes the inventory's pods to tenants."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from gpuposture.base.safe_parse import SafeParseError, load_yaml
from inventory.sync import pod_tenants_refresh
from tenants.services import tenants_apply
from tenants.spec import TenantSpecError, parse_tenants_document

MAX_FILE_BYTES = 5 * 1024 * 1024
MAX_ALIASES = 32
ACTOR = "manage.py apply_tenants"  # who the audit log says made the changes


def load_tenants_file(path: Path) -> object:
    if not path.is_file():
        raise CommandError(f"{path}: no such file")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise CommandError(f"{path}: larger than {MAX_FILE_BYTES // 1024 // 1024} MB")
    try:
        # A tenants file nests about five levels; a few aliases may repeat principal lists.
        return load_yaml(path.read_bytes(), max_bytes=MAX_FILE_BYTES, max_aliases=MAX_ALIASES)
    except SafeParseError as exc:
        raise CommandError(f"{path}: {exc}") from exc


class Command(BaseCommand):
    help = "Create or update tenants from a YAML file (idempotent; others are left alone)."

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)

    def handle(self, *args, file: Path, **options) -> None:
        try:
            specs = parse_tenants_document(load_tenants_file(file))
            result = tenants_apply(specs=specs, actor=ACTOR)
        except TenantSpecError as exc:
            raise CommandError(f"{file}: {exc}") from exc
        moved = pod_tenants_refresh()
        for warning in result.warnings:
            self.stderr.write(f"warning: {warning}")
        self.stdout.write(
            f"tenants: {len(result.created)} created, {len(result.updated)} updated, "
            f"{len(result.unchanged)} unchanged; {moved} pods re-attributed"
        )
