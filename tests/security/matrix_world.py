"""The world the permission matrix fills URL parameters from: the small world (alpha and beta
time-sliced on node gpu-ts-1 of cluster "lab") plus a third tenant, gamma, alone on its own
cluster, whose viewer is the matrix's "tenant viewer of another tenant"; and one of every
object a URL names (a provider with an assessment and an evidence file, a sharing request
per tenant, a bulletin, a reset attestation, utilisation rows, an audit event, MIG nodes,
an API token).

Objects come in pairs: `own` (alpha's, or not tenant-scoped) fills the URL for the matrix, and
`other` (gamma's, then beta's) is what viewer_alpha must never reach. Gamma's names carry
"zz9" so a sentinel search cannot match anything else on a page."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from django.core.management import call_command
from django.db import transaction
from django.test import override_settings
from django.utils import timezone

# Strings that name beta or gamma and nothing else: none may reach viewer_alpha.
BETA_SENTINELS = ("beta-prod", "inference-0", "batch-done", "Beta Corp", "beta-ops", "betacorp")
GAMMA_SENTINELS = (
    "gamma",  # the slug; also inside every name below
    "zz9",  # the cluster, its node and its provider
)
# The tenant slugs as whole words (a JSON value, a URL part, a table cell).
HIDDEN_SLUG_PATTERN = r"(?<![\w-])(beta|gamma)(?![\w-])"

ZZ9_CONFIG = """version: v1
mig-configs:
  all-balanced:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
"""


# The objects that belong to a tenant: `World.other` holds beta's and gamma's of each kind.
TENANT_OBJECTS = frozenset(
    {
        "tenant_slug",
        "tenant",
        "finding",
        "cluster",
        "node_page",
        "node",
        "pod",
        "sync_run",
        "drift_event",
        "sharing_request",
        "reset",
        "provider",
        "action",
    }
)


@dataclass
class World:
    """URL parameters by object name: `own[name]` for the matrix, `other[name]` for the
    objects viewer_alpha must get a 404 for."""

    own: dict[str, dict[str, object]] = field(default_factory=dict)
    other: dict[str, list[dict[str, object]]] = field(default_factory=dict)
    query: dict[str, str] = field(default_factory=dict)


def _mig_items(node: str, namespace: str, pod: str) -> list[dict]:
    """Kubernetes objects for a MIG node (an H100 in the all-balanced layout) running one pod,
    shaped like tests/data/small-cluster.json, and the GPU Operator's mig-parted ConfigMap."""
    from tests.conftest import load_json

    items = load_json("small-cluster.json")["items"]
    gpu_node = copy.deepcopy(next(i for i in items if i["metadata"]["name"] == "gpu-ts-1"))
    gpu_node["metadata"].update(name=node, uid=f"uid-{node}")
    gpu_node["metadata"]["labels"] = {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": "8",
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mig.config": "all-balanced",
        "nvidia.com/mig.config.state": "success",
        "kubernetes.io/hostname": node,
    }
    workload = copy.deepcopy(next(i for i in items if i["metadata"]["name"] == "trainer-0"))
    workload["metadata"].update(name=pod, namespace=namespace, uid=f"uid-{namespace}-{pod}")
    workload["spec"]["nodeName"] = node
    workload["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/mig-1g.10gb": "1"},
        "requests": {"nvidia.com/mig-1g.10gb": "1"},
    }
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "default-mig-parted-config",
            "namespace": "gpu-operator",
            "uid": f"uid-mig-parted-{node}",
        },
        "data": {"config.yaml": ZZ9_CONFIG},
    }
    return [gpu_node, workload, configmap]


def _namespace(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "spec": {},
        "status": {"phase": "Active"},
        "metadata": {"name": name, "uid": f"uid-{name}"},
    }


def _sync(name: str, items: list[dict], directory: Path):
    from inventory.services import cluster_sync_from_snapshot
    from inventory.sync import cluster_get_or_create

    path = directory / f"{name}.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    cluster = cluster_get_or_create(name=name)
    cluster_sync_from_snapshot(cluster=cluster, paths=[path])
    return cluster


def make_personas() -> dict:
    """The conftest personas, and gamma's viewer: the tenant viewer of another tenant."""
    from gpuposture.base import roles
    from tests.conftest import make_user

    return {
        "security_lead": make_user("sec", roles.SECURITY_LEAD),
        "platform_engineer": make_user("plat", roles.PLATFORM_ENGINEER),
        "procurement": make_user("proc", roles.PROCUREMENT),
        "auditor": make_user("aud", roles.AUDITOR),
        "no_role": make_user("nobody"),
        "viewer_alpha": make_user("viewer-alpha", roles.TENANT_VIEWER),
        "viewer_beta": make_user("viewer-beta", roles.TENANT_VIEWER),
        "viewer_gamma": make_user("viewer-gamma-zz9", roles.TENANT_VIEWER),
    }


def _tenants_and_clusters(personas, directory: Path):
    """The small world of tests/conftest.py with gamma declared next to alpha and beta, a MIG
    node for alpha added to "lab", and gamma alone on cluster "zz9-lab"."""
    from tenants.services import tenants_apply
    from tenants.spec import parse_tenants_document
    from tests.conftest import load_json

    document = load_json("small-tenants.json")
    document["tenants"].append(
        {
            "slug": "gamma",
            "name": "Gamma Zz9 Labs",
            "trust_class": "external",
            "namespaces": ["gamma-zz9"],
            "principals": ["group:gamma-zz9-ops"],
            "viewers": [personas["viewer_gamma"].username],
        }
    )
    tenants_apply(specs=parse_tenants_document(document), actor="matrix world")
    small = load_json("small-cluster.json")["items"]
    lab = _sync("lab", [*small, *_mig_items("mig-lab-1", "team-alpha", "trainer-mig-0")], directory)
    zz9 = _sync(
        "zz9-lab",
        [_namespace("gamma-zz9"), *_mig_items("mig-zz9-1", "gamma-zz9", "gamma-zz9-trainer")],
        directory,
    )
    return lab, zz9


def _providers(lab, zz9, personas):
    from providers.assessments import assessment_start, evidence_attach
    from providers.models import Provider, ProviderContact, Questionnaire
    from providers.questionnaires import spec_of

    call_command("load_questionnaires", verbosity=0)
    nimbus = Provider.objects.create(slug="nimbus", name="Nimbus GPU Cloud")
    ProviderContact.objects.create(provider=nimbus, name="Rosa Lind")
    lab.provider = nimbus
    lab.save()
    hidden = Provider.objects.create(slug="zz9-cloud", name="Zz9 Cloud")
    zz9.provider = hidden
    zz9.save()
    user = personas["procurement"]
    assessment = assessment_start(provider=nimbus, user=user)
    spec_question = spec_of(assessment.questionnaire).questions[0].id
    evidence = evidence_attach(
        assessment=assessment,
        question_id=spec_question,
        user=user,
        name="wipe.txt",
        content_type="text/plain",
        data=b"GPU memory is scrubbed between customers.\n",
    )
    return nimbus, hidden, assessment, evidence, Questionnaire.objects.first()


def build_world(personas, directory: Path) -> World:
    """Everything above; uploads go to MEDIA_ROOT, which the caller points somewhere private."""
    from accounts.services import token_create
    from audit.models import AuditEvent
    from gpuposture.base import roles
    from inventory.models import (
        Bulletin,
        BulletinFix,
        BulletinImport,
        BulletinRevision,
        DriftEvent,
        Node,
        Pod,
        SyncRun,
    )
    from notifications.models import Subscription
    from posture.models import Action, Finding
    from posture.services import posture_evaluate
    from sharing.services import sharing_request_create
    from telemetry.models import GpuUsageDaily, ResetAttestation
    from tenants.models import Tenant, TrustClass
    from tests.conftest import make_user

    now = timezone.now()
    lab, zz9 = _tenants_and_clusters(personas, directory)
    alpha, beta, gamma = (Tenant.objects.get(slug=s) for s in ("alpha", "beta", "gamma"))
    mig_zz9 = Node.objects.get(cluster=zz9, name="mig-zz9-1")
    gamma_pod = Pod.objects.get(cluster=zz9, name="gamma-zz9-trainer")
    runs = {c.pk: SyncRun.objects.filter(cluster=c).first() for c in (lab, zz9)}
    drift = {
        c.pk: DriftEvent.objects.create(
            cluster=c,
            sync_run=runs[c.pk],
            kind="config",
            check_id="DRIFT-001",
            subject_kind="ConfigMap",
            subject_namespace="gpu-operator",
            subject_name="time-slicing-config",
            summary="replicas 4 -> 8",
            detected_at=now,
        )
        for c in (lab, zz9)
    }
    posture_evaluate()
    # Each tenant's own finding: one no other tenant shares (a shared one reaches both).
    slugs = ("alpha", "beta", "gamma")
    findings = {
        t: Finding.objects.filter(tenants__slug=t)
        .exclude(tenants__slug__in=[s for s in slugs if s != t])
        .first()
        for t in slugs
    }
    assert all(findings.values()), findings
    # Each tenant's own fix-first action, as its own finding is.
    actions = {
        t: Action.objects.filter(tenants__slug=t)
        .exclude(tenants__slug__in=[s for s in slugs if s != t])
        .first()
        for t in slugs
    }
    assert all(actions.values()), actions
    # Asked by another platform engineer: the persona may then decide them (four eyes), so an
    # empty body reaches the decision (an approval needs no note) rather than a refusal.
    requester = make_user("plat-requester", roles.PLATFORM_ENGINEER)
    requests = {
        t.slug: sharing_request_create(
            tenant=t,
            cluster=cluster,
            mode="mig_gi",
            user=requester,
            justification="Inference replicas fit in one GPU instance each.",
        )
        for t, cluster in ((alpha, lab), (beta, lab), (gamma, zz9))
    }
    resets = {
        t.slug: ResetAttestation.objects.create(
            cluster=cluster,
            node=node,
            reset_at=now,
            method="gpu_reset",
            previous_tenant=t,
            recorded_by="plat",
        )
        for t, cluster, node in ((alpha, lab, "gpu-ts-1"), (gamma, zz9, "mig-zz9-1"))
    }
    for t, cluster, host in (
        (alpha, lab, "gpu-ts-1"),
        (beta, lab, "gpu-ts-1"),
        (gamma, zz9, "mig-zz9-1"),
    ):
        GpuUsageDaily.objects.create(
            cluster=cluster,
            day=date.today(),
            hostname=host,
            uuid=f"GPU-{t.slug}-0",
            tenant=t,
            attribution="tenant",
            confidence="exact",
            gpu_hours=20.0,
            busy_gpu_hours=0.5,
            samples=240,
        )
    nimbus, hidden, assessment, evidence, questionnaire = _providers(lab, zz9, personas)
    bulletin = Bulletin.objects.create(
        tracking_id="NVIDIA-ZZ-0001",
        title="GPU driver advisory",
        category="csaf_security_advisory",
        version="1",
        current_release_date=now,
        aggregate_severity="High",
        tlp="WHITE",  # public: every role reads it (AMBER/RED: tests/test_bulletin_marking.py)
    )
    # Its one fix concerns gpu-ts-1's driver (550.90.07): the cluster's VEX has a statement.
    BulletinFix.objects.create(
        bulletin=bulletin,
        kind="driver",
        platform="linux",
        branch="R550",
        line="tesla",
        affected_op="<",
        affected_version="550.163.01",
        fixed_version="550.163.01",
        cves=["CVE-2025-23244"],
        max_cvss=7.8,
        severity="high",
    )
    bulletin_import = BulletinImport.objects.create(trigger="cli", status="succeeded")
    # Held for a security lead; its document is not CSAF, so a confirmation is refused (400).
    bulletin_revision = BulletinRevision.objects.create(
        tracking_id=bulletin.tracking_id,
        version="2",
        base_version="1",
        document={},
        changes={"weakening": ["driver linux R550 tesla: no longer in the bulletin"]},
    )
    token, _key = token_create(user=personas["viewer_alpha"], name="ci", scope="read")
    subscription = Subscription.objects.create(
        user=personas["viewer_alpha"], kind="finding_new", tenant=alpha
    )
    gpu_ts = Node.objects.get(cluster=lab, name="gpu-ts-1")
    trainer = Pod.objects.get(cluster=lab, name="trainer-0")
    beta_pod = Pod.objects.get(cluster=lab, name="inference-0")

    world = World()
    world.own = {
        "tenant_slug": {"slug": "alpha"},
        "tenant": {"pk": alpha.pk},
        "finding": {"pk": findings["alpha"].pk},
        "action": {"key": actions["alpha"].key},
        "check_page": {"check_id": "POD-001"},
        "check": {"pk": "POD-001"},
        "cluster": {"name": "lab"},
        "node_page": {"cluster": "lab", "name": "gpu-ts-1"},
        "node": {"pk": gpu_ts.pk},
        "pod": {"pk": trainer.pk},
        "sync_run": {"pk": runs[lab.pk].pk},
        "drift_event": {"pk": drift[lab.pk].pk},
        "sharing_request": {"pk": requests["alpha"].pk},
        "reset": {"pk": resets["alpha"].pk},
        "provider": {"slug": "nimbus"},
        "assessment": {"pk": assessment.pk},
        "assessment_download": {"pk": assessment.pk, "fmt": "csv"},
        "evidence": {"pk": assessment.pk, "file_id": evidence.pk},
        "questionnaire": {"pk": questionnaire.pk},
        "bulletin": {"pk": bulletin.pk},
        "bulletin_import": {"pk": bulletin_import.pk},
        "bulletin_revision": {"pk": bulletin_revision.pk},
        "audit_event": {"pk": AuditEvent.objects.order_by("pk").first().pk},
        "trust_class": {"slug": TrustClass.objects.get(slug="internal").slug},
        "token": {"pk": token.pk},
        "notification_subscription": {"pk": subscription.pk},
    }
    world.other = {
        "tenant_slug": [{"slug": "gamma"}, {"slug": "beta"}],
        "tenant": [{"pk": gamma.pk}, {"pk": beta.pk}],
        "finding": [{"pk": findings["gamma"].pk}, {"pk": findings["beta"].pk}],
        "action": [{"key": actions["gamma"].key}, {"key": actions["beta"].key}],
        "cluster": [{"name": "zz9-lab"}],
        "node_page": [{"cluster": "zz9-lab", "name": "mig-zz9-1"}],
        "node": [{"pk": mig_zz9.pk}],
        "pod": [{"pk": gamma_pod.pk}, {"pk": beta_pod.pk}],
        "sync_run": [{"pk": runs[zz9.pk].pk}],
        "drift_event": [{"pk": drift[zz9.pk].pk}],
        "sharing_request": [{"pk": requests["gamma"].pk}, {"pk": requests["beta"].pk}],
        "reset": [{"pk": resets["gamma"].pk}],
        "provider": [{"slug": "zz9-cloud"}],
    }
    assert set(world.other) == TENANT_OBJECTS
    world.query = {
        "mig_node_own": "?cluster=lab&node=mig-lab-1",
        "mig_node_other": "?cluster=zz9-lab&node=mig-zz9-1",
    }
    return world


@contextmanager
def module_world(
    django_db_blocker, tmp_path_factory, build: Callable[[dict, Path], World] | None = None
) -> Iterator[tuple[dict, World]]:
    """Personas and `build`'s world (build_world's by default) for a whole test module, in a
    transaction rolled back at the end; each test runs in a savepoint on top."""
    from gpuposture.celery import app as celery_app

    celery_app.conf.task_always_eager = True
    hashers = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    media = str(tmp_path_factory.mktemp("uploads"))
    with django_db_blocker.unblock(), override_settings(PASSWORD_HASHERS=hashers, MEDIA_ROOT=media):
        atomic = transaction.atomic()
        atomic.__enter__()
        try:
            personas = make_personas()
            yield personas, (build or build_world)(personas, tmp_path_factory.mktemp("snapshots"))
        finally:
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)
