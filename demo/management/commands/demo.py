"""demo: load the demo world (users, tenants, two clusters, findings, scores) and print logins.

Everything goes through the paths a user's data takes: the tenants file through
apply_tenants, the clusters through kubectl-style JSON snapshots and sync, nvidia-smi XML
through its import, then score. Last week's state is synced and scored first (and dated a
week back), so the demo shows drift, resolved findings and a score trend; neo-west is then
synced as it was mid-week (dated three days back), so sync history holds a GPU handover.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import yaml
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import transaction

from demo.approvals import load_demo_requests
from demo.providers import load_demo_providers
from demo.steps import (
    ACTOR,
    bulletins_load,
    demo_cluster,
    driver_acceptance_load,
    failed_sync_load,
    host_facts_load,
    image_policy_set,
    last_week_load,
    mid_week_load,
    policy_packs_load,
    snapshot_write,
    telemetry_load,
)
from demo.triage import load_demo_triage
from demo.world import build_clusters
from gpuposture.base.mfa import demo_mfa_reset
from gpuposture.base.rescore import rescore_suppressed
from gpuposture.base.roles import ROLES, TENANT_VIEWER
from inventory.models import SyncRun
from inventory.schedule import cluster_schedule_update
from inventory.services import cluster_sync_from_snapshot
from inventory.sync import pod_tenants_refresh
from posture.rescore import rescore_now
from tenants.services import tenants_apply
from tenants.spec import parse_tenants_document

DEMO_DIR = Path(settings.BASE_DIR) / "demo"
ROLE_USERS = {
    "security-lead": "security_lead",
    "platform-engineer": "platform_engineer",
    # A second engineer: sharing requests need four eyes.
    "platform-engineer-2": "platform_engineer",
    "procurement": "procurement",
    "auditor": "auditor",
}


class Command(BaseCommand):
    help = "Load the demo world and print demo logins (new random passwords each time)."

    def add_arguments(self, parser) -> None:
        # `make demo HOST=... PORT=...` passes where it will serve, so the address printed
        # at the end is the one the server really listens on.
        parser.add_argument("--host", default="127.0.0.1", help="where the server will listen")
        parser.add_argument("--port", default="8000", help="the port the server will listen on")

    def handle(self, *args, **options) -> None:
        # Loading asks for no re-score step by step: the world is scored once at the end.
        # Once loaded, the demo's changes (an acceptance, an approval) re-score at once.
        with rescore_suppressed():
            self._load(address=_address(options["host"], options["port"]))

    def _load(self, *, address: str) -> None:
        specs = parse_tenants_document(yaml.safe_load((DEMO_DIR / "tenants.yaml").read_text()))
        logins = self._users(sorted({v for spec in specs for v in spec.viewers}))
        image_policy_set()
        tenants_apply(specs=specs, actor=ACTOR)
        pod_tenants_refresh()
        self.stdout.write(f"tenants: {len(specs)}")
        world = build_clusters()
        folder = Path(settings.VAR_DIR) / "demo-snapshots"
        folder.mkdir(parents=True, exist_ok=True)
        first_time = not SyncRun.objects.exists()
        if first_time:
            last_week_load(self.stdout, world, folder)
            mid_week_load(self.stdout, world, folder)
        for name, objects in world.items():
            cluster = demo_cluster(name)
            path = snapshot_write(folder, name, objects)
            run = cluster_sync_from_snapshot(cluster=cluster, paths=[path], actor=ACTOR)
            cluster_schedule_update(cluster=cluster)
            self.stdout.write(
                f"cluster {name}: synced {run.counts.get('Node', 0)} nodes, "
                f"{run.counts.get('Pod', 0)} pods; "
                f"{run.changes.get('drift_events', 0)} drift events"
            )
        failed_sync_load(self.stdout, folder)
        host_facts_load(self.stdout)
        bulletins_load(self.stdout)
        telemetry_load(self.stdout)
        self.stdout.write(f"sharing requests: {load_demo_requests()} new")
        self.stdout.write(f"provider assessments: {load_demo_providers()} new")
        # The notifications app's own command: its subscriptions exist before the final
        # score, whose digests fill the delivery logs.
        call_command("demo_notifications", stdout=self.stdout)
        # Before the last score, so the accepted risk already counts 0 in it.
        self.stdout.write(f"triage: {load_demo_triage()} findings accepted or given an owner")
        driver_acceptance_load(self.stdout)
        # Last before the score: the pack is generated from everything loaded above.
        policy_packs_load(self.stdout, world, folder)
        run = rescore_now()
        self.stdout.write(
            f"posture: {run.counts.get('opened', 0) + run.counts.get('still_open', 0)} live, "
            f"{run.counts.get('resolved', 0)} resolved findings; "
            f"{run.counts.get('tenants_scored', 0)} tenants scored"
        )
        self._print_logins(logins, address=address)

    @transaction.atomic
    def _users(self, viewers: list[str]) -> list[tuple[str, str, str, str | None]]:
        """Create or reset the demo accounts; passwords are random on every run, and so are
        the TOTP secrets of the accounts whose role requires two-factor sign-in."""
        user_model = get_user_model()
        groups = {g.name: g for g in Group.objects.filter(name__in=ROLES)}
        wanted = [("admin", "superuser"), *ROLE_USERS.items()]
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
            secret = demo_mfa_reset(user)
            logins.append((username, password, role, secret))
        return logins

    def _print_logins(
        self,
        logins: list[tuple[str, str, str, str | None]],
        *,
        address: str = "http://127.0.0.1:8000/",
    ) -> None:
        self.stdout.write("\nDemo logins (new random passwords each time `demo` runs):")
        for username, password, role, _secret in logins:
            self.stdout.write(f"  {username:22} {password:20} {role}")
        with_totp = [(username, secret) for username, _, _, secret in logins if secret]
        if with_totp:
            roles = ", ".join(settings.GPUPOSTURE_MFA_REQUIRED_ROLES)
            self.stdout.write(
                f"Two-factor sign-in (required for {roles}):\nafter the password, enter the "
                "current code from `make totp USER=<login>` (or\n`.venv/bin/python manage.py "
                "totp_code <login>`), or add the secret to an authenticator app:"
            )
            for username, secret in with_totp:
                self.stdout.write(f"  {username:22} secret {secret}")
        self.stdout.write(f"Open {address} and sign in.")


def _address(host: str, port: str) -> str:
    """The address a browser opens: 0.0.0.0 listens everywhere, 127.0.0.1 reaches it."""
    shown = "127.0.0.1" if host in {"0.0.0.0", ""} else host  # noqa: S104
    shown = f"[{shown}]" if ":" in shown and not shown.startswith("[") else shown
    return f"http://{shown}:{port}/"
