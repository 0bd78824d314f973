"""demo: load the demo world (users, tenants, two clusters, findings, scores) and print logins.

Everything goes through the same paths a user's data takes: the tenants file through
apply_tenants, the clusters through kubectl-style JSON snapshots and sync, then score.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import yaml
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand
from django.db import transaction

from demo.world import write_snapshots
from gpuposture.base.roles import ROLES, TENANT_VIEWER
from inventory.models import Cluster
from inventory.services import cluster_sync_from_snapshot
from inventory.sync import cluster_get_or_create, pod_tenants_refresh
from posture.services import posture_evaluate
from providers.models import Provider
from tenants.services import tenants_apply
from tenants.spec import parse_tenants_document

DEMO_DIR = Path(settings.BASE_DIR) / "demo"
ROLE_USERS = {
    "security-lead": "security_lead",
    "platform-engineer": "platform_engineer",
    "procurement": "procurement",
    "auditor": "auditor",
}
CLUSTER_DESCRIPTIONS = {
    "prod-east": "On-premises training and inference cluster",
    "neo-west": "Rented GPU capacity at a GPU cloud provider",
}


class Command(BaseCommand):
    help = "Load the demo world and print demo logins (new random passwords each time)."

    def handle(self, *args, **options) -> None:  # type: ignore[no-untyped-def]
        document = yaml.safe_load((DEMO_DIR / "tenants.yaml").read_text())
        specs = parse_tenants_document(document)
        viewers = sorted({v for spec in specs for v in spec.viewers})
        logins = self._users(viewers)
        result = tenants_apply(specs=specs)
        pod_tenants_refresh()
        self.stdout.write(f"tenants: {len(specs)} ({len(result.created)} new)")
        snapshot_dir = Path(settings.VAR_DIR) / "demo-snapshots"
        for name, path in write_snapshots(snapshot_dir).items():
            cluster = cluster_get_or_create(name=name)
            self._describe(cluster)
            run = cluster_sync_from_snapshot(cluster=cluster, paths=[path])
            self.stdout.write(
                f"cluster {name}: synced {run.counts.get('Node', 0)} nodes, "
                f"{run.counts.get('Pod', 0)} pods from {path}"
            )
        run = posture_evaluate()
        self.stdout.write(
            f"posture: {run.counts.get('opened', 0) + run.counts.get('still_open', 0)} live "
            f"findings, {run.counts.get('tenants_scored', 0)} tenants scored"
        )
        self._print_logins(logins)

    def _describe(self, cluster: Cluster) -> None:
        cluster.description = CLUSTER_DESCRIPTIONS.get(cluster.name, cluster.description)
        if cluster.name == "neo-west":
            cluster.provider, _ = Provider.objects.get_or_create(
                slug="nimbus-gpu",
                defaults={"name": "Nimbus GPU Cloud", "website": "https://nimbus-gpu.example"},
            )
        cluster.save()

    @transaction.atomic
    def _users(self, viewers: list[str]) -> list[tuple[str, str, str]]:
        """Create or reset the demo accounts; passwords are random on every run."""
        user_model = get_user_model()
        groups = {g.name: g for g in Group.objects.filter(name__in=ROLES)}
        wanted = [("admin", "superuser")] + list(ROLE_USERS.items())
        wanted += [(v, TENANT_VIEWER) for v in viewers]
        logins = []
        for username, role in wanted:
            user, _ = user_model.objects.get_or_create(username=username)
            password = secrets.token_urlsafe(12)
            user.set_password(password)
            user.is_staff = user.is_superuser = role == "superuser"
            user.save()
            if role in groups:
                user.groups.set([groups[role]])
            logins.append((username, password, role))
        return logins

    def _print_logins(self, logins: list[tuple[str, str, str]]) -> None:
        self.stdout.write("\nDemo logins (new random passwords each time `demo` runs):")
        for username, password, role in logins:
            self.stdout.write(f"  {username:22} {password:20} {role}")
        self.stdout.write("Open http://127.0.0.1:8000/ and sign in.")
