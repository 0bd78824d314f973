"""demo: load the demo world (users, tenants, two clusters, findings, scores) and print logins.

Everything goes through the paths a user's data takes: the tenants file through
apply_tenants, the clusters through kubectl-style JSON snapshots and sync, nvidia-smi XML
through its import, then score. Last week's state is synced and scored first (and dated a
week back), so the demo shows drift, resolved findings and a score trend.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import yaml
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from demo.approvals import load_demo_requests
from demo.bulletins import BULLETINS, driver_bulletin_revised
from demo.clusters import CLUSTERS, EXTERNAL_POOL_TAINT
from demo.history import last_week
from demo.k8s_pack import deployed_pack
from demo.nvidia_smi import HOSTS, nvidia_smi_xml
from demo.providers import load_demo_providers
from demo.telemetry import DemoNode, DemoPod, demo_samples, uuid_of
from demo.triage import load_demo_triage
from demo.world import build_clusters, kubectl_sorted
from gpuposture.base.mfa import demo_mfa_reset
from gpuposture.base.rescore import rescore_suppressed
from gpuposture.base.roles import ROLES, TENANT_VIEWER
from inventory.bulletin_imports import bulletins_import_recorded
from inventory.models import Cluster, DriftEvent, Node, PatchSla, Pod, SyncRun
from inventory.schedule import cluster_schedule_update
from inventory.services import cluster_save, cluster_sync_from_snapshot, node_host_facts_import
from inventory.sync import SyncError, cluster_get_or_create, pod_tenants_refresh
from posture.models import Finding, PostureRun, TenantScore
from posture.policy_packs import generated_policy_pack
from posture.rescore import rescore_now
from providers.services import provider_ensure
from telemetry.models import GpuReading, GpuUsageHourly, ResetAttestation
from telemetry.services import samples_ingest, telemetry_rollup
from tenants.models import Tenant, TrustClass
from tenants.services import (
    tenants_apply,
    trust_class_image_policy_set,
    trust_class_pool_taints_set,
)
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
# What demo/telemetry.py plants per cluster: a node that never reports (ATTR-003), a GPU busy
# with no pod (ATTR-001), GPUs handed between tenants (LEAK-001; prod-east's gets a reset).
TELEMETRY_PLAN = {
    "prod-east": {
        # pe-l40s-02 runs no DCGM exporter at all (its patch status still reads current).
        "silent": ("pe-t4-02", "pe-l40s-02"),
        "handovers": (("pe-a100-01", "research-llm"),),
    },
    "neo-west": {
        "hijacked": "nw-h200-02",
        "handovers": (("nw-h200-01", "research-llm"),),
    },
}
CLUSTER_DESCRIPTIONS = {
    "prod-east": "On-premises training and inference cluster",
    "neo-west": "Rented GPU capacity at a GPU cloud provider",
}
WEEK = timedelta(days=7)
ACTOR = "manage.py demo"  # who the audit log says made the demo's changes


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
        self._image_policy()
        tenants_apply(specs=specs, actor=ACTOR)
        pod_tenants_refresh()
        self.stdout.write(f"tenants: {len(specs)}")
        world = build_clusters()
        folder = Path(settings.VAR_DIR) / "demo-snapshots"
        folder.mkdir(parents=True, exist_ok=True)
        first_time = not SyncRun.objects.exists()
        if first_time:
            self._last_week(world, folder)
        for name, objects in world.items():
            cluster = self._cluster(name)
            path = _write(folder, name, objects)
            run = cluster_sync_from_snapshot(cluster=cluster, paths=[path], actor=ACTOR)
            cluster_schedule_update(cluster=cluster)
            self.stdout.write(
                f"cluster {name}: synced {run.counts.get('Node', 0)} nodes, "
                f"{run.counts.get('Pod', 0)} pods; "
                f"{run.changes.get('drift_events', 0)} drift events"
            )
        self._failed_sync(folder)
        self._host_facts()
        self._bulletins()
        self._telemetry()
        self.stdout.write(f"sharing requests: {load_demo_requests()} new")
        self.stdout.write(f"provider assessments: {load_demo_providers()} new")
        # Named, not imported: notifications sits above posture (imports go one way). Its
        # subscriptions exist before the final score, whose digests fill the delivery logs.
        call_command("demo_notifications", stdout=self.stdout)
        # Before the last score, so the accepted risk already counts 0 in it.
        self.stdout.write(f"triage: {load_demo_triage()} findings accepted or given an owner")
        # Last before the score: the pack is generated from everything loaded above.
        self._policy_packs(world, folder)
        run = rescore_now()
        self.stdout.write(
            f"posture: {run.counts.get('opened', 0) + run.counts.get('still_open', 0)} live, "
            f"{run.counts.get('resolved', 0)} resolved findings; "
            f"{run.counts.get('tenants_scored', 0)} tenants scored"
        )
        self._print_logins(logins, address=address)

    def _image_policy(self) -> None:
        """The demo organisation's rule (POD-007): external and sensitive tenants run images
        from the internal registry, pinned by digest."""
        for trust_class in TrustClass.objects.filter(slug__in=["external", "sensitive"]):
            trust_class_image_policy_set(
                trust_class=trust_class,
                approved_registries=["registry.example.internal"],
                require_image_digest=True,
                actor=ACTOR,
            )
        # The GPU cloud taints its external pool by its own convention (tenant-class), which
        # the platform team lists on the class, as it would in the admin.
        external = TrustClass.objects.get(slug="external")
        trust_class_pool_taints_set(
            trust_class=external, pool_taints=[EXTERNAL_POOL_TAINT], actor=ACTOR
        )

    def _cluster(self, name: str) -> Cluster:
        cluster = cluster_get_or_create(name=name, actor=ACTOR)
        cluster.description = CLUSTER_DESCRIPTIONS.get(name, cluster.description)
        if name == "neo-west":
            cluster.provider = provider_ensure(
                slug="nimbus-gpu",
                name="Nimbus GPU Cloud",
                website="https://nimbus-gpu.example",
                actor=ACTOR,
            )
        return cluster_save(cluster=cluster, actor=ACTOR)

    def _last_week(self, world: dict[str, list[dict]], folder: Path) -> None:
        """Sync and score last week's state, then date those runs a week back (demo only)."""
        started = timezone.now()
        for name, objects in world.items():
            path = _write(folder, f"{name}-last-week", last_week(name, objects))
            cluster_sync_from_snapshot(cluster=self._cluster(name), paths=[path], actor=ACTOR)
        rescore_now()
        then = timezone.now() - WEEK
        with transaction.atomic():
            SyncRun.objects.filter(started_at__gte=started).update(
                started_at=then, finished_at=then
            )
            PostureRun.objects.filter(started_at__gte=started).update(
                started_at=then, finished_at=then
            )
            TenantScore.objects.filter(computed_at__gte=started).update(computed_at=then)
            Finding.objects.filter(first_seen__gte=started).update(first_seen=then, last_seen=then)
            DriftEvent.objects.filter(detected_at__gte=started).update(detected_at=then)
        self.stdout.write("last week: synced and scored (dated 7 days back)")

    def _policy_packs(self, world: dict[str, list[dict]], folder: Path) -> None:
        """gpuposture's admission pack where the demo deploys one (demo/clusters.py
        `admission_pack`): generated for the cluster as now registered and synced, applied
        with the drifts of demo/k8s_pack.py, and read back by the next sync."""
        for spec in CLUSTERS:
            if not spec.admission_pack:
                continue
            cluster = Cluster.objects.get(name=spec.name)
            pack = generated_policy_pack(cluster, dialect=spec.admission_pack)
            if not pack:  # the enforcement app is not installed: nothing to deploy
                continue
            objects = kubectl_sorted(world[spec.name] + deployed_pack(spec.name, pack))
            path = _write(folder, spec.name, objects)
            cluster_sync_from_snapshot(cluster=cluster, paths=[path], actor=ACTOR)
            self.stdout.write(
                f"policy pack ({spec.admission_pack}) on {spec.name}: {len(pack)} objects "
                "applied in Enforce, one binding left in Audit and one policy edited by hand "
                "(DRIFT-005); synced again"
            )

    def _failed_sync(self, folder: Path) -> None:
        """A kubectl dump cut short, as happens: the run fails and nothing changes. It is
        neo-west's latest sync, so its banner says the cluster is stale and why."""
        broken = folder / "neo-west-truncated.json"
        broken.write_text('{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", ')
        # The sync module logs every failed sync as a WARNING; here the failure is the point,
        # and a warning in the middle of the demo's output reads like a broken install.
        try:
            with _quiet("inventory.sync"):
                cluster_sync_from_snapshot(
                    cluster=self._cluster("neo-west"), paths=[broken], actor=ACTOR
                )
        except SyncError:
            self.stdout.write(
                "neo-west: a failed sync, on purpose (part of the demo): a truncated snapshot "
                "was refused, recorded, and changed nothing; the cluster page shows it as stale"
            )

    def _host_facts(self) -> None:
        cluster = Cluster.objects.get(name="prod-east")
        for node in HOSTS:
            node_host_facts_import(cluster=cluster, node_name=node, xml=nvidia_smi_xml(node))
        self.stdout.write(f"nvidia-smi: host facts for {len(HOSTS)} prod-east nodes")

    def _bulletins(self) -> None:
        # Recorded like any import (the demo scores right after, so no re-score here); then a
        # revision that drops a branch, held for a security lead to confirm on /bulletins/.
        source = "demo/bulletins.py"
        bulletins_import_recorded(
            trigger="demo", actor=ACTOR, documents=[(source, b()) for b in BULLETINS], rescore=False
        )
        _record, revised = bulletins_import_recorded(
            trigger="demo",
            actor=ACTOR,
            documents=[(source, driver_bulletin_revised())],
            rescore=False,
        )
        self.stdout.write(
            f"bulletins: {len(BULLETINS)} (demo copies); {len(revised.held)} weakening revision "
            "held for a security lead"
        )
        # The security lead tightened the critical SLA (the demo scores right after, so the
        # service's re-score is not needed here).
        PatchSla.objects.update_or_create(
            severity="critical", defaults={"days": 5, "updated_by": "security-lead"}
        )

    def _telemetry(self) -> None:
        """A day of GPU samples per cluster (demo/telemetry.py), rolled up by the hour, and a
        reset recorded for one of the two GPU handovers between tenants."""
        now = timezone.now()
        GpuReading.objects.all().delete()  # a re-run starts the day again
        GpuUsageHourly.objects.all().delete()
        ResetAttestation.objects.filter(recorded_by="platform-engineer").delete()
        for cluster in Cluster.objects.filter(name__in=TELEMETRY_PLAN):
            options = TELEMETRY_PLAN[cluster.name]
            samples = demo_samples(_demo_nodes(cluster), now=now, **options)
            result = samples_ingest(cluster=cluster, samples=samples)
            self.stdout.write(f"telemetry {cluster.name}: {result.samples} samples")
        telemetry_rollup(now=now)
        handover_at = now - timedelta(hours=13)
        prod = Cluster.objects.get(name="prod-east")
        ResetAttestation.objects.create(
            cluster=prod,
            node="pe-a100-01",
            gpu_uuid=uuid_of("pe-a100-01", 0),
            reset_at=handover_at,
            method=ResetAttestation.Method.GPU_RESET,
            previous_tenant=Tenant.objects.filter(slug="research").first(),
            next_tenant=Tenant.objects.filter(slug="orbital").first(),
            recorded_by="platform-engineer",
            note="Drained and reset before the new tenant.",
        )

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


@contextmanager
def _quiet(logger_name: str) -> Iterator[None]:
    """Hide one logger's warnings for a step whose failure is expected."""
    logger = logging.getLogger(logger_name)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _write(folder: Path, name: str, objects: list[dict]) -> Path:
    path = folder / f"{name}.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    return path


def _demo_nodes(cluster: Cluster) -> list[DemoNode]:
    pods: dict[int, list[DemoPod]] = {}
    rows = Pod.objects.filter(cluster=cluster, phase="Running", node__isnull=False)
    for node_id, namespace, name, resources in rows.values_list(
        "node_id", "namespace", "name", "gpu_resources"
    ):
        mig = next((r for r in resources if r.startswith("nvidia.com/mig-")), "")
        gpus = int(resources.get("nvidia.com/gpu", 0) or 0)
        if gpus or mig:
            profile = mig.removeprefix("nvidia.com/mig-")
            pods.setdefault(node_id, []).append(DemoPod(namespace, name, gpus, profile))
    return [
        DemoNode(
            n.name, n.gpu_model, n.gpu_count or 0, n.sharing_strategy, tuple(pods.get(n.pk, ()))
        )
        for n in Node.objects.filter(cluster=cluster, is_gpu_node=True).order_by("name")
    ]
