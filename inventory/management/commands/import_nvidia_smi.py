"""import_nvidia_smi --cluster NAME [--node NODE] FILE: host GPU facts from nvidia-smi -q -x."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from gpuposture.base.echo import echoed
from inventory.hostfacts_import import HostFactsResult, node_host_facts_import
from inventory.input_failures import NVIDIA_SMI, import_failure_record
from inventory.models import Cluster
from inventory.sources.nvidia_smi import MAX_INPUT_BYTES, NvidiaSmiError
from inventory.sources.object_names import subdomain_problem
from inventory.sync import cluster_get_or_create
from tenants.spec import SLUG_RE

ACTOR = "manage.py import_nvidia_smi"


class Command(BaseCommand):
    help = (
        "Read `nvidia-smi -q -x` XML for one node (driver, CUDA, VBIOS as firmware, product, "
        "MIG mode, UUIDs) and merge it into that node of the inventory; a host the Kubernetes "
        "API does not list becomes a node described by nvidia-smi only. The cluster record is "
        "created if new, as sync_cluster does."
    )

    def add_arguments(self, parser):
        parser.add_argument("--cluster", required=True, help="cluster name (created if new)")
        parser.add_argument("--node", help="node name (default: the file name without .xml)")
        parser.add_argument("file", type=Path)

    def handle(self, *args, cluster: str, node: str | None, file: Path, **options) -> None:
        if not SLUG_RE.match(cluster):
            raise CommandError(f"cluster name {cluster!r}: use lowercase letters, digits, hyphens")
        if not file.is_file():
            raise CommandError(f"{file}: no such file")
        if file.stat().st_size > MAX_INPUT_BYTES:
            raise CommandError(f"{file}: larger than {MAX_INPUT_BYTES // 1024 // 1024} MB")
        node_name = node or file.name.removesuffix(".xml")
        if problem := subdomain_problem(node_name):
            # Merged into, or stored as, a node the API lists by this name: one the API could
            # never list matches nothing and would only ever be a host of its own.
            given = "--node" if node else "node name (from the file name; pass --node)"
            raise CommandError(
                f"{given} {echoed(node_name)}: {problem}; give the node's name as "
                "`kubectl get nodes` shows it"
            )
        new_cluster = not Cluster.objects.filter(name=cluster).exists()
        try:
            # One transaction: input refused by the parser leaves no new cluster record behind.
            with transaction.atomic():
                record = cluster_get_or_create(name=cluster, actor=ACTOR)
                result = node_host_facts_import(
                    cluster=record, node_name=node_name, xml=file.read_bytes()
                )
        except NvidiaSmiError as exc:
            # Recorded for the cluster's page, as a failed sync is; nothing of it was stored.
            import_failure_record(
                cluster_name=cluster,
                what=NVIDIA_SMI,
                source=str(file),
                error=str(exc),
                actor=ACTOR,
                node=node_name,
            )
            raise CommandError(f"{file}: {exc}") from exc
        if new_cluster:
            self.stderr.write(f"created cluster {cluster} (no sync yet)")
        self.stdout.write(_summary(cluster, node_name, result.facts))
        if not result.node_found:  # merged into a node the API lists: nothing to add
            self.stderr.write(_host_only(cluster, node_name, result))


def _summary(cluster: str, node_name: str, facts: dict) -> str:
    return (
        f"{cluster}/{node_name}: {facts['gpu_count']} x {facts['gpu_model']}, driver "
        f"{facts['driver_version']}, CUDA {facts['cuda_driver_version']}, VBIOS "
        f"{facts['firmware_version']}, MIG {'on' if facts['mig_enabled'] else 'off'}"
    )


def _host_only(cluster: str, node_name: str, result: HostFactsResult) -> str:
    verb = "created" if result.node_created else "updated"
    return (
        f"{verb} node {node_name}, described by nvidia-smi only: the Kubernetes API of "
        f"{cluster} does not list it; syncs keep it, and merge it when the API lists it"
    )
