"""import_nvidia_smi --cluster NAME [--node NODE] FILE: host GPU facts from nvidia-smi -q -x."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from inventory.models import Cluster
from inventory.services import node_host_facts_import
from inventory.sources.nvidia_smi import MAX_INPUT_BYTES, NvidiaSmiError


class Command(BaseCommand):
    help = (
        "Read `nvidia-smi -q -x` XML for one node (driver, CUDA, VBIOS as firmware, product, "
        "MIG mode, UUIDs) and merge it into that node of the inventory."
    )

    def add_arguments(self, parser):
        parser.add_argument("--cluster", required=True)
        parser.add_argument("--node", help="node name (default: the file name without .xml)")
        parser.add_argument("file", type=Path)

    def handle(self, *args, cluster: str, node: str | None, file: Path, **options) -> None:
        record = Cluster.objects.filter(name=cluster).first()
        if record is None:
            raise CommandError(f"no cluster named {cluster!r}; sync it first")
        if not file.is_file():
            raise CommandError(f"{file}: no such file")
        if file.stat().st_size > MAX_INPUT_BYTES:
            raise CommandError(f"{file}: larger than {MAX_INPUT_BYTES // 1024 // 1024} MB")
        node_name = node or file.name.removesuffix(".xml")
        try:
            result = node_host_facts_import(
                cluster=record, node_name=node_name, xml=file.read_bytes()
            )
        except NvidiaSmiError as exc:
            raise CommandError(f"{file}: {exc}") from exc
        facts = result.facts
        self.stdout.write(
            f"{cluster}/{node_name}: {facts['gpu_count']} x {facts['gpu_model']}, driver "
            f"{facts['driver_version']}, CUDA {facts['cuda_driver_version']}, VBIOS "
            f"{facts['firmware_version']}, MIG {'on' if facts['mig_enabled'] else 'off'}"
        )
        if not result.node_found:
            self.stderr.write(
                f"warning: node {node_name} is not in the inventory of {cluster}; the facts are "
                "kept and merged when a sync brings the node"
            )
