"""Every list page and list endpoint of the permission matrix uses the same number of queries
at 3 and at 30 of everything, under a pinned bound (STYLE rule 9)."""

from __future__ import annotations

from datetime import date

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from accounts.services import token_create
from audit.services import audit_record
from inventory.models import (
    Bulletin,
    BulletinImport,
    BulletinRevision,
    Cluster,
    DriftEvent,
    Node,
    Pod,
    SyncRun,
)
from notifications.models import Delivery, Subscription
from posture.action_store import actions_refresh
from posture.models import ClusterScoreState, Finding, PostureRun, TenantScore
from providers.models import Answer, Assessment, Provider, ProviderContact, Questionnaire
from telemetry.models import GpuUsageDaily, ResetAttestation
from tenants.models import SharingRequest, Tenant, TrustClass
from tests.conftest import api_client, content
from tests.security.matrix_table import OWNER, TABLE

pytestmark = pytest.mark.django_db

# The most queries each list makes for any of the personas below (the same at 3 and at 30).
# Where a tenant viewer's names are hidden ("hidden names" below), a cluster they see that holds
# pods no tenant claims adds the reads of its platform namespaces (+3 here, one such cluster:
# inventory.platform.cluster_platform_namespaces): the unclassified party is hidden from them,
# the platform's namespaces are not (inventory.presenter._unclaimed).
# Every request first reads the user's roles (1 query, cached on the user for the request);
# the API test client authenticates without a session, pages add the session and the user.
# Where no worker runs (Celery eager, as here) a read of scores, findings or actions first
# sweeps for what expired since the last score (posture.rescore.rescore_expired_when_eager):
# acceptances, approvals, approvals past their class's ceiling (one query per ceiling: one
# here), questionnaires.
SWEEP = 5
PINNED: dict[str, int] = {
    # API lists (paginated): roles + count + page.
    "api:trustclass-list": 3,
    "api:cluster-list": 3,
    "api:bulletinimport-list": 3,
    "api:bulletinrevision-list": 3,
    # Workloads: roles + count + page + the platform namespaces of each cluster of the page
    # with a workload no tenant claims (one here; inventory.pod_party), and, where the sync
    # read no Deployment (as here: pods only), the pods that stand for their controllers
    # (inventory.platform._unread_controllers), + the owner links of the page's namespaces
    # (inventory.pod_workloads; no pod here is owned by a pod, which would be one more).
    "api:pod-list": 6,
    # ... + for a tenant viewer, the names of the tenants they may not see (inventory.presenter
    # hides them in warnings, drift, labels and taints, the other tenant of a reset: 1 query).
    "api:syncrun-list": 7,
    # ... + for a tenant viewer, the nodes they see: each event names only those
    # (inventory.drift_read).
    "api:driftevent-list": 8,
    "api:node-list": 7,
    "api:gpu-list": 4,  # roles + GPU nodes (cluster joined) + their nvidia-smi facts
    "api:resetattestation-list": 7,  # tenants and cluster joined
    "api:auditevent-list": 3,
    # Tenant, cluster and the users joined; for a tenant viewer + the names they may not see,
    # hidden in what people typed (1 query, + 3 for the platform namespaces, as above).
    "api:sharingrequest-list": 7,
    "api:questionnaire-list": 3,
    # ... + one per prefetched relation: namespaces, principals, viewer names, viewers,
    # labelled namespaces.
    "api:tenant-list": 8 + SWEEP,
    "api:bulletin-list": 4,  # + fixes
    "api:assessment-list": 5,  # + answers, their evidence files
    "api:provider-list": 6,  # + contacts, assessments (standing), hosted clusters
    # Findings: roles + count + page + the tenants each finding of the page affects (one query
    # for the page); a tenant viewer's subjects, titles and evidence are presented, which reads
    # the names of the tenants they may not see (+1).
    "api:finding-list": 8 + SWEEP,
    # The export counts what it will send (to refuse past GPUPOSTURE_EXPORT_MAX_ROWS), then
    # streams it 2,000 rows a query, each chunk with its tenants: two at both sizes. csv/json
    # alike; SARIF + its checks.
    "api:finding-export": 8 + SWEEP,
    # Actions: roles + count + page (cluster joined) + the tenants each action of the page
    # helps; a tenant viewer's titles are presented (+1: the names they may not see).
    "api:action-list": 8 + SWEEP,
    # Not paginated: computed in a fixed number of grouped queries.
    "api:check-list": 3,  # roles + open findings per check + the latest posture run
    "api:check-frameworks": 2,  # roles + open findings per check
    "api:api-patch-sla": 2,  # roles + the SLA rows
    "api:api-utilisation": 8,  # roles + 3 day roll-ups (per tenant, top, idle) + 4 name lists
    # Pages: session + user + roles, then one query per table or chart of the page.
    # Overview: tenants with open counts, latest scores, trend, findings and the tenants they
    # affect (prefetched), hidden names (1), clusters and their last syncs; outside the cache,
    # how current it is: the clusters' last syncs, failures and re-scores (1).
    "overview": 15 + SWEEP,
    # Home: the overview for a security lead, the tenants page for a tenant viewer of several
    # tenants, procurement's questionnaires (to fill, renewals due, providers not covered,
    # submitted: 4); never more than the overview.
    "home": 12 + SWEEP,
    # Tenants: count + page (open counts, latest and previous risk and score annotated) +
    # the page's latest scores (prefetched) + the trust classes of the filter.
    "tenant-list": 7 + SWEEP,
    # count + page (cluster, acceptor and owner joined) + the page's tenants (prefetched) +
    # hidden names (1) + the pick-lists' tenants and clusters (2)
    "finding-list": 12 + SWEEP,
    "check-list": 5,  # open findings per check + the latest posture run
    "check-frameworks": 4,  # open findings per check
    "cluster-list": 5,  # clusters + their sync runs (prefetched)
    "node-list": 9,  # count + page (cluster joined) + hidden names (1)
    "patch-status": 9,  # GPU nodes, SLA rows, the rollout's nodes and tenants' trust classes
    # the tenants and MIG nodes the user may see, and the ClusterPolicies' sandbox defaults (VM
    # nodes are left out)
    "mig-partitioner": 6,
    # 3 day roll-ups, 4 name lists, the cluster chooser, recent resets, hidden names (1)
    "utilisation": 16,
    "utilisation-csv": 5,  # tenant names + the per-tenant day roll-up
    "sharing-request-list": 6,  # count + may-request check + page (relations joined)
    "approvals-queue": 5,  # count + page of pending requests
    "provider-list": 6,  # providers + their assessments and clusters (prefetched)
    "provider-compare": 6,  # the chooser's providers + their assessments and clusters
    "bulletin-list": 7,  # bulletins + fixes + recent imports + held revisions
    "audit-log": 5,  # count + page
    "token-list": 4,  # the user's own tokens
    # The user's webhook, subscriptions (tenant and cluster joined), last 50 deliveries, and
    # the tenants and clusters the subscribe form offers.
    "notification-settings": 8,
    # The clusters, then posture.read_model.posture_inputs for the shown one (a fixed set of
    # reads: the snapshot by kind, tenants, approvals, exemptions, telemetry, the handovers
    # sync history recorded, patch records, the kinds the last full sync did not read; about
    # 20), the trust classes, the stored pack
    # (lock, latest, previous, insert), and for a tenant viewer their namespaces instead of
    # the pack's storage.
    "enforcement": 33,
}
# Rows of the matrix with no parameter that are not lists: forms, the API root, the schema.
NOT_LISTS = {
    "cluster-create",
    "patch-sla",
    "reset-create",
    "sharing-request-new",
    "provider-create",
    "bulletin-import",
    "api:api-root",
    "api:api-mig-node-layout",
    "schema",
    "swagger-ui",
}


def test_every_list_of_the_matrix_is_pinned():
    lists = {
        name
        for name, access in TABLE.items()
        if access.kind in ("page", "api") and access.get and not access.obj
    }
    assert lists - NOT_LISTS - set(PINNED) == set(), "pin these lists' query counts here"
    assert set(PINNED) <= lists


def build_world(size: int, users: list[User]) -> None:
    """`size` of everything a list shows: tenants (each with a GPU node, a pod, three findings,
    a score, a sharing request, a reset, a day of GPU-hours, an audit event), providers with
    an assessment, sync runs with drift, bulletins and their imports, API tokens."""
    now = timezone.now()
    cluster = Cluster.objects.create(name=f"c{size}")
    # Scored now, as its hand-made scores say: nothing has expired since (a read of scores
    # sweeps for that first where no worker runs: posture.rescore.rescore_expired_when_eager).
    ClusterScoreState.objects.create(cluster=cluster, last_scored_at=now)
    internal = TrustClass.objects.get(slug="internal")
    run = PostureRun.objects.create()
    questionnaire, _ = Questionnaire.objects.get_or_create(
        slug="q", version=1, defaults={"title": "q", "spec": {}, "spec_hash": "x"}
    )
    viewer = users[-1]
    tenants: list[Tenant] = []
    for i in range(size):
        tenant = Tenant.objects.create(slug=f"t{size}-{i}", name=f"T {i}", trust_class=internal)
        tenant.viewers.add(viewer)
        # `data` as the sync stores it (the snapshot the enforcement page rebuilds and judges).
        node = Node.objects.create(
            cluster=cluster,
            name=f"n{i}",
            is_gpu_node=True,
            changed_at=now,
            data={"name": f"n{i}"},
        )
        Pod.objects.create(
            cluster=cluster,
            namespace=f"ns{i}",
            name="p",
            node=node,
            tenant=tenant,
            phase="Running",
            changed_at=now,
            data={"namespace": f"ns{i}", "name": "p", "phase": "Running"},
        )
        # A pod no tenant claims: the workloads list names its party ("unclassified" here).
        Pod.objects.create(
            cluster=cluster,
            namespace=f"stray{i}",
            name="p",
            node=node,
            phase="Running",
            changed_at=now,
            data={"namespace": f"stray{i}", "name": "p", "phase": "Running"},
        )
        for j, severity in enumerate(("critical", "high", "low")):
            finding = Finding.objects.create(
                check_id="POD-001",
                severity=severity,
                cluster=cluster,
                subject_kind="Pod",
                subject_namespace=f"ns{i}",
                subject_name=f"p{j}",
                fingerprint=f"{size}-{i}-{j}",
                title="t",
                first_seen=now,
                last_seen=now,
            )
            # The low one is a shared cause: it affects the tenant made before too.
            finding.tenants.add(tenant, *(tenants[-1:] if j == 2 else []))
        tenants.append(tenant)
        TenantScore.objects.create(
            run=run, tenant=tenant, computed_at=now, score=40, grade="F", contributions=[]
        )
        SharingRequest.objects.create(
            tenant=tenant, cluster=cluster, mode="mig_gi", justification="j", requested_by=viewer
        )
        ResetAttestation.objects.create(
            cluster=cluster,
            node=f"n{i}",
            reset_at=now,
            method="gpu_reset",
            previous_tenant=tenant,
            recorded_by="plat",
        )
        GpuUsageDaily.objects.create(
            cluster=cluster,
            day=date.today(),
            hostname=f"n{i}",
            uuid=f"GPU-{i}",
            tenant=tenant,
            attribution="tenant",
            confidence="exact",
            gpu_hours=20.0,
            busy_gpu_hours=0.5,
        )
        audit_record(actor=viewer, action="create", obj=tenant, after={"slug": tenant.slug})
        provider = Provider.objects.create(slug=f"p{size}-{i}", name=f"P {i}")
        ProviderContact.objects.create(provider=provider, name="c")
        assessment = Assessment.objects.create(
            provider=provider,
            questionnaire=questionnaire,
            created_by=viewer,
            status="accepted",
            expires_at=now,
            score=80,
            red_flags=[{"question": "Q-1"}],
        )
        Answer.objects.create(assessment=assessment, question_id="Q-1", value="yes")
        sync = SyncRun.objects.create(cluster=cluster, source="s.json", status="succeeded")
        DriftEvent.objects.create(
            cluster=cluster,
            sync_run=sync,
            kind="config",
            check_id="DRIFT-001",
            subject_kind="ConfigMap",
            subject_namespace="gpu-operator",
            subject_name=f"cm{i}",
            summary="changed",
            detected_at=now,
        )
        Bulletin.objects.create(
            tracking_id=f"B-{size}-{i}",
            title="b",
            category="csaf_security_advisory",
            version="1",
            current_release_date=now,
        )
        record = BulletinImport.objects.create(trigger="cli", status="succeeded")
        BulletinRevision.objects.create(
            tracking_id=f"B-{size}-{i}",
            version="2",
            base_version="1",
            document={},
            changes={"weakening": ["a product dropped"]},
            held_by=record,
        )
        for user in users:
            token_create(user=user, name=f"tok{i}", scope="read")
            Subscription.objects.create(user=user, kind="finding_new", tenant=tenant)
            Delivery.objects.create(user=user, channel="email", trigger="t", subject=f"s{i}")
    cluster.provider = provider
    cluster.save()
    actions_refresh(now=now)  # one action per finding here: each is its own workload's fix


def wipe() -> None:
    models = (
        Finding,
        TenantScore,
        Pod,
        SharingRequest,
        ResetAttestation,
        GpuUsageDaily,
        Tenant,
        DriftEvent,
        SyncRun,
        Cluster,
        Provider,
        Bulletin,
        BulletinRevision,
        BulletinImport,
    )
    for model in models:
        model.objects.all().delete()
    for user in User.objects.all():
        user.api_tokens.all().delete()
    Delivery.objects.all().delete()


def count_queries(name: str, user: User) -> int:
    url = reverse(name) + ("?format=csv" if name == "api:finding-export" else "")
    user = User.objects.get(pk=user.pk)  # no roles cached from a previous request
    if TABLE[name].kind == "api":
        client = api_client(user)
    else:
        client = Client()
        client.force_login(user)
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
        content(response)  # a streamed export reads the database while it is sent
    assert response.status_code == 200, (url, response.status_code)
    return len(ctx.captured_queries)


@pytest.mark.parametrize("persona", ["security_lead", "procurement", OWNER])
def test_query_counts_do_not_grow_with_size(personas, persona):
    user = personas[persona]
    names = [n for n in PINNED if persona in TABLE[n].read]
    counts: dict[str, list[int]] = {n: [] for n in names}
    for size in (3, 30):
        wipe()
        build_world(size, [personas["security_lead"], personas["procurement"], personas[OWNER]])
        for name in names:
            counts[name].append(count_queries(name, user))
    wrong = [
        f"{name}: {small} queries at 3, {large} at 30 (pinned at most {PINNED[name]})"
        for name, (small, large) in counts.items()
        if small != large or large > PINNED[name]
    ]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("persona", ["platform_engineer", "auditor"])
def test_home_query_count_does_not_grow_with_size(personas, persona):
    """The homes the matrix personas above do not land on (posture.homes)."""
    users = [personas["security_lead"], personas["procurement"], personas[OWNER]]
    counts = []
    for size in (3, 30):
        wipe()
        build_world(size, users)
        counts.append(count_queries("home", personas[persona]))
    # session + user + roles; platform: pending requests + their count + stale clusters (2)
    # + patch counts + nodes below baseline; auditor: events + open findings per check.
    assert counts[0] == counts[1] <= PINNED["home"], counts
