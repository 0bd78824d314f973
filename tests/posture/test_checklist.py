"""The practitioner checklist: pure decisions, and the cluster page and API that show it."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from django.test import Client

from posture.checklist import ChecklistFacts, cluster_checklist
from posture.rules import CHECKS
from tests.conftest import api_client, load_json

ALL = frozenset(CHECKS)


def statuses(facts: ChecklistFacts) -> dict[int, str]:
    return {item.number: item.status for item in cluster_checklist(facts)}


def test_an_unsynced_cluster_is_unknown_everywhere():
    assert set(
        statuses(ChecklistFacts(synced=False, gpu_nodes=0, time_sliced_nodes=0)).values()
    ) == {"unknown"}


def test_pass_fail_and_unknown_from_real_facts():
    facts = ChecklistFacts(
        synced=True,
        gpu_nodes=4,
        time_sliced_nodes=1,
        open_findings={"SHARE-001": 2, "K8S-001": 1},
        registered_checks=ALL,
        trust_classes={"internal": ("exclusive", "mig_gi")},
        provider="Nimbus GPU Cloud",
    )
    result = statuses(facts)
    assert result[1] == "pass" and result[2] == "fail" and result[8] == "fail"
    assert result[3] == "pass" and result[6] == "pass"
    assert result[4] == "fail"  # no bulletins imported
    assert result[5] == result[9] == "unknown"
    assert result[10] == "pass"  # a provider, and no PROV-001 open: its questionnaire is accepted
    item2 = cluster_checklist(facts)[1]
    assert item2.evidence["open_findings"] == {"SHARE-001": 2}


def test_a_provider_without_an_accepted_questionnaire_fails_item_10():
    facts = ChecklistFacts(
        synced=True,
        gpu_nodes=1,
        time_sliced_nodes=0,
        open_findings={"PROV-001": 3},
        registered_checks=ALL,
        provider="Nimbus GPU Cloud",
    )
    item = cluster_checklist(facts)[9]
    assert (item.status, item.evidence["open_findings"]) == ("fail", {"PROV-001": 3})
    assert item.evidence["provider"] == "Nimbus GPU Cloud"


def test_an_open_leak_fails_item_9_without_telemetry_too():
    """LEAK-001 from sync history is open with no GPU samples: item 9 fails on it."""
    base = dict(synced=True, gpu_nodes=1, time_sliced_nodes=0, registered_checks=ALL)
    item = cluster_checklist(ChecklistFacts(**base, open_findings={"LEAK-001": 1}))[8]
    assert (item.status, item.evidence["open_findings"]) == ("fail", {"LEAK-001": 1})
    # Nothing open and no telemetry: unknown (sync history misses handovers between syncs).
    assert cluster_checklist(ChecklistFacts(**base))[8].status == "unknown"
    # Telemetry over the whole window LEAK-001 looks in, no handover without a reset: pass.
    watched = ChecklistFacts(**base, telemetry_samples=1, telemetry_span_hours=7 * 24)
    assert cluster_checklist(watched)[8].status == "pass"


def test_an_accepted_finding_keeps_its_item_failing():
    """Accepting a /dev hostPath (or a handover without reset) changes its risk, not the fact
    the item states: item 6 (and 9) still fail, the evidence saying it is accepted."""
    base = dict(synced=True, gpu_nodes=1, time_sliced_nodes=0, registered_checks=ALL)
    items = cluster_checklist(
        ChecklistFacts(**base, accepted_findings={"POD-003": 1, "LEAK-001": 1})
    )
    six, nine = items[5], items[8]
    assert (six.status, six.evidence["open_findings"]) == ("fail", {})
    assert six.evidence["accepted_findings"] == {"POD-003": 1}
    assert (nine.status, nine.evidence["accepted_findings"]) == ("fail", {"LEAK-001": 1})
    assert cluster_checklist(ChecklistFacts(**base))[5].status == "pass"


def test_an_item_whose_check_is_missing_is_unknown_not_pass():
    facts = ChecklistFacts(
        synced=True,
        gpu_nodes=1,
        time_sliced_nodes=0,
        registered_checks=ALL - {"K8S-004"},
        trust_classes={"x": ("exclusive",)},
    )
    assert statuses(facts)[7] == "unknown"


def test_an_item_passes_only_where_the_last_sync_read_what_it_judges():
    """A snapshot of nodes and pods only: no finding on sharing ConfigMaps means RBAC was never
    looked at, not that only the platform may edit them; one with no pods says nothing of the
    pods' hardening. Failing stays failing whatever was read."""
    nodes_and_pods = ChecklistFacts(
        synced=True,
        gpu_nodes=2,
        time_sliced_nodes=0,
        registered_checks=ALL,
        open_findings={"K8S-001": 1},
        kinds_read=frozenset({"Node", "Pod", "Namespace"}),
    )
    result = statuses(nodes_and_pods)
    assert (result[2], result[6], result[7], result[8]) == ("pass", "pass", "unknown", "fail")
    item7 = cluster_checklist(nodes_and_pods)[6]
    assert (
        "read no Role, ClusterRole, RoleBinding or ClusterRoleBinding" in item7.evidence["reason"]
    )
    nodes_and_rbac = ChecklistFacts(
        synced=True,
        gpu_nodes=2,
        time_sliced_nodes=0,
        registered_checks=ALL,
        kinds_read=frozenset({"Node", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}),
    )
    result = statuses(nodes_and_rbac)
    assert (result[2], result[3], result[6], result[7]) == ("unknown", "pass", "unknown", "pass")


@pytest.mark.parametrize(
    ("read", "reason"),
    [
        # The GPU Operator's own ClusterRoleBinding alone: no role, no RoleBinding.
        ({"ClusterRoleBinding"}, "read no Role, ClusterRole or RoleBinding"),
        # Who holds a role, not what it may write.
        ({"RoleBinding", "ClusterRoleBinding"}, "read no Role or ClusterRole"),
        # A RoleBinding not read may grant the write.
        ({"Role", "ClusterRole", "ClusterRoleBinding"}, "read no RoleBinding"),
    ],
)
def test_item_7_is_unknown_until_roles_and_both_bindings_are_read(read, reason):
    """No K8S-004 open means no tenant may write the sharing ConfigMaps only where every
    binding and every role it could name were read: with one kind missing nothing shows who
    can write them, and the evidence names what was not read."""
    facts = ChecklistFacts(
        synced=True,
        gpu_nodes=2,
        time_sliced_nodes=0,
        registered_checks=ALL,
        kinds_read=frozenset({"Node", "Pod", *read}),
    )
    item7 = cluster_checklist(facts)[6]
    assert item7.status == "unknown" and reason in item7.evidence["reason"]
    rbac = ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")
    assert item7.evidence["not_read"] == [kind for kind in rbac if kind not in read]
    # A K8S-004 open still fails it, whatever was read.
    failing = replace(facts, open_findings={"K8S-004": 1})
    assert cluster_checklist(failing)[6].status == "fail"


@pytest.mark.parametrize("read", [{"Pod", "Namespace"}, {"Namespace"}])
def test_items_2_and_5_are_unknown_where_no_node_was_read(read):
    """A snapshot without Node objects (a partial `kubectl get`, a read the account was refused)
    shows no GPU node: that is nothing judged, not "no time-slicing" or "no node past the SLA"
    (both had read pass, with gpu_nodes_checked 0: rtpeerrank k14/k87). A cluster whose Nodes
    were read and hold no GPU still passes them, as before."""
    facts = ChecklistFacts(
        synced=True,
        gpu_nodes=0,
        time_sliced_nodes=0,
        registered_checks=ALL,
        bulletins=3,
        days_since_bulletin_import=1,
        kinds_read=frozenset(read),
    )
    items = cluster_checklist(facts)
    for number in (2, 5):
        assert items[number - 1].status == "unknown", number
        assert "Node" in items[number - 1].evidence["not_read"]
    cpu_only = replace(facts, kinds_read=frozenset({*read, "Node", "Pod"}))
    assert (statuses(cpu_only)[2], statuses(cpu_only)[5]) == ("pass", "pass")


GPU_OPERATOR_BINDING = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRoleBinding",
    "metadata": {"name": "gpu-operator"},
    "roleRef": {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "gpu-operator",
    },
    "subjects": [{"kind": "ServiceAccount", "name": "gpu-operator", "namespace": "gpu-operator"}],
}


@pytest.mark.django_db
def test_one_clusterrolebinding_alone_does_not_pass_item_7(small_world, personas, tmp_path):
    """A snapshot of the small world and the GPU Operator's own ClusterRoleBinding, with no
    Role, ClusterRole or RoleBinding: nothing shows who may write the sharing ConfigMaps, so
    the checklist says unknown, naming what was not read, as without the binding."""
    from inventory.services import cluster_sync_from_snapshot
    from posture.services import posture_evaluate

    url = "/api/v1/clusters/lab/checklist/"
    before = {r["number"]: r for r in api_client(personas["auditor"]).get(url).json()}
    assert before[7]["status"] == "unknown"
    items = [*load_json("small-cluster.json")["items"], GPU_OPERATOR_BINDING]
    snapshot = tmp_path / "with-binding.json"
    snapshot.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    cluster_sync_from_snapshot(cluster=small_world, paths=[snapshot])
    posture_evaluate()
    after = {r["number"]: r for r in api_client(personas["auditor"]).get(url).json()}
    assert after[7]["status"] == "unknown"
    assert after[7]["evidence"]["not_read"] == ["Role", "ClusterRole", "RoleBinding"]


@pytest.mark.django_db
def test_the_checklist_reads_what_the_last_full_sync_read(small_world, personas):
    from inventory.models import SyncRun
    from posture.selectors import checklist_facts

    run = small_world.sync_runs.filter(status=SyncRun.Status.SUCCEEDED).latest("started_at")
    assert checklist_facts(small_world, personas["auditor"]).kinds_read == {
        kind for kind, n in run.counts.items() if n
    }
    # A watch re-sync reads only what changed: the last full list still says what was read.
    SyncRun.objects.create(
        cluster=small_world,
        mode=SyncRun.Mode.WATCH,
        status=SyncRun.Status.SUCCEEDED,
        counts={"Pod": 1},
    )
    assert "Node" in checklist_facts(small_world, personas["auditor"]).kinds_read


@pytest.mark.django_db
def test_checklist_on_the_cluster_page_and_api(small_world, personas):
    rows = api_client(personas["auditor"]).get("/api/v1/clusters/lab/checklist/").json()
    by_number = {row["number"]: row for row in rows}
    assert len(rows) == 10
    assert by_number[2]["status"] == "fail"  # alpha and beta time-slice one GPU
    assert by_number[6]["status"] == "fail"  # beta's privileged container
    assert by_number[10]["status"] == "pass"  # on-premises: no provider
    client = Client()
    client.force_login(personas["security_lead"])
    page = client.get("/clusters/lab/").content.decode()
    assert "Practitioner checklist" in page and "No time-slicing or MPS between tenants" in page
    assert (
        api_client(personas["procurement"]).get("/api/v1/clusters/lab/checklist/").status_code
        == 404
    )


def test_bulletin_items_follow_the_imports_and_the_sla():
    base = dict(
        synced=True,
        gpu_nodes=2,
        time_sliced_nodes=0,
        registered_checks=ALL,
        trust_classes={"x": ("exclusive",)},
    )
    fresh = statuses(ChecklistFacts(**base, bulletins=3, days_since_bulletin_import=2))
    assert fresh[4] == "pass" and fresh[5] == "pass"
    stale = ChecklistFacts(
        **base, bulletins=3, days_since_bulletin_import=30, open_findings={"STACK-005": 4}
    )
    assert statuses(stale)[4] == "fail" and statuses(stale)[5] == "fail"


def test_item_5_does_not_pass_over_gpu_nodes_whose_patch_status_is_unknown():
    """No STACK-005 open is no node known to be past the SLA. A GPU node whose driver or
    toolkit version is not known (EKS Auto Mode's AMI, a host-installed toolkit) may be: the
    item said pass, "patched" where nothing was known (rtmanaged2 k18)."""
    base = dict(
        synced=True,
        gpu_nodes=4,
        time_sliced_nodes=0,
        registered_checks=ALL,
        bulletins=2,
        days_since_bulletin_import=2,
    )
    item = cluster_checklist(ChecklistFacts(**base, patch_unknown_nodes=3))[4]
    assert item.status == "unknown"
    assert item.evidence["gpu_nodes_patch_unknown"] == 3
    assert item.evidence["reason"].startswith("3 of 4 GPU node(s) have an unknown patch status")
    assert statuses(ChecklistFacts(**base, patch_unknown_nodes=0))[5] == "pass"
    # A node known past the SLA fails it whatever the others are.
    past = ChecklistFacts(**base, patch_unknown_nodes=3, open_findings={"STACK-005": 1})
    assert statuses(past)[5] == "fail"


@pytest.mark.django_db
def test_item_5_reads_the_stored_patch_status_of_the_clusters_gpu_nodes(small_world, personas):
    from inventory.bulletins.store import bulletins_import_paths
    from inventory.models import Node
    from tests.realworld import realworld

    bulletins_import_paths(paths=[str(realworld("csaf", "nvidia-5630.json"))])
    gpu_nodes = Node.objects.filter(cluster=small_world, is_gpu_node=True)
    lead = api_client(personas["security_lead"])
    gpu_nodes.update(patch_status="current")
    assert lead.get("/api/v1/clusters/lab/checklist/").json()[4]["status"] == "pass"
    gpu_nodes.update(patch_status="unknown")
    row = lead.get("/api/v1/clusters/lab/checklist/").json()[4]
    assert row["status"] == "unknown"
    assert row["evidence"]["gpu_nodes_patch_unknown"] == gpu_nodes.count()


@pytest.mark.django_db
def test_a_tenant_viewer_checklist_counts_only_their_own(small_world, personas):
    """Counts over the whole cluster told a viewer how many findings (and which kinds) the
    other tenants have: a viewer's checklist is judged over what they may see."""
    from telemetry.models import ResetAttestation
    from tenants.models import Tenant

    ResetAttestation.objects.create(
        cluster=small_world,
        node="gpu-ts-1",
        reset_at="2026-11-30T10:00:00Z",
        method="reboot",
        previous_tenant=Tenant.objects.get(slug="beta"),
        recorded_by="plat",
    )
    url = "/api/v1/clusters/lab/checklist/"
    lead = {r["number"]: r for r in api_client(personas["security_lead"]).get(url).json()}
    viewer = {r["number"]: r for r in api_client(personas["viewer_alpha"]).get(url).json()}
    # alpha and beta time-slice one GPU: one SHARE-001 for the pair, which alpha's viewer
    # sees as theirs; the lead also sees what the other pairs on the cluster have.
    assert lead[2]["evidence"]["open_findings"]["SHARE-001"] >= 1
    assert viewer[2]["evidence"]["open_findings"] == {"SHARE-001": 1}
    # beta's privileged container fails item 6 for the cluster, and for alpha too: it runs
    # beside alpha's pods, so its way onto the node affects alpha (POD-001's neighbours).
    assert lead[6]["status"] == "fail" and viewer[6]["status"] == "fail"
    assert lead[9]["evidence"]["reset_attestations"] == 1
    assert viewer[9]["evidence"]["reset_attestations"] == 0
    client = Client()
    client.force_login(personas["viewer_alpha"])
    page = client.get("/clusters/lab/").content.decode()
    # The evidence as rows (check -> open findings), not JSON.
    one, two = (
        '<th scope="row">SHARE-001</th><td>1</td>',
        '<th scope="row">SHARE-001</th><td>2</td>',
    )
    assert one in page and two not in page


def test_item_8_is_unknown_where_no_gpu_node_is_seen():
    base = dict(synced=True, time_sliced_nodes=0, registered_checks=ALL)
    item = cluster_checklist(ChecklistFacts(**base, gpu_nodes=0))[7]
    assert (item.status, item.evidence["reason"]) == ("unknown", "no GPU node seen")
    assert statuses(ChecklistFacts(**base, gpu_nodes=1))[8] == "pass"
    # A finding open fails it all the same (GPU pods with no GPU node seen, say).
    assert statuses(ChecklistFacts(**base, gpu_nodes=0, open_findings={"K8S-001": 1}))[8] == "fail"
    assert statuses(ChecklistFacts(**base, gpu_nodes=1, open_findings={"K8S-001": 1}))[8] == "fail"


def test_item_3_is_unknown_where_no_gpu_node_is_seen():
    """No GPU node: no GPU stack was inventoried, so "inventoried on every GPU node" does not
    pass (it said pass with gpu_nodes_checked 0)."""
    base = dict(synced=True, time_sliced_nodes=0, registered_checks=ALL)
    item = cluster_checklist(ChecklistFacts(**base, gpu_nodes=0))[2]
    assert (item.status, item.evidence["reason"]) == ("unknown", "no GPU node seen")
    assert item.evidence["gpu_nodes_checked"] == 0
    assert statuses(ChecklistFacts(**base, gpu_nodes=1))[3] == "pass"
    assert (
        statuses(ChecklistFacts(**base, gpu_nodes=0, open_findings={"STACK-004": 1}))[3] == "fail"
    )


def _cpu_world(tmp_path, *nodes: dict) -> str:
    import json

    web = {
        "kind": "Pod",
        "metadata": {"name": "web-0", "namespace": "team-alpha"},
        "spec": {"nodeName": "cpu-1", "containers": [{"name": "web", "image": "nginx:1.27"}]},
        "status": {"phase": "Running"},
    }
    items = [{"kind": "Namespace", "metadata": {"name": "team-alpha"}}, *nodes, web]
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps({"kind": "List", "items": items}))
    return str(path)


def _node(name: str, gpus: int) -> dict:
    capacity = {"cpu": "16", **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
    labels = {"nvidia.com/gpu.count": str(gpus)} if gpus else {}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


@pytest.mark.django_db
def test_a_cpu_only_cluster_has_no_quota_finding_and_item_8_unknown(personas, tmp_path):
    """A tenant running nginx on a cluster with no GPU: no K8S-001 (it said "no GPU pods: no
    enforced quota key"), item 8 unknown; one GPU node brings both back."""
    from inventory.services import cluster_sync_from_snapshot
    from inventory.sync import cluster_get_or_create
    from posture.models import Finding
    from posture.services import posture_evaluate
    from tenants.services import tenants_apply
    from tenants.spec import parse_tenants_document
    from tests.conftest import load_json

    tenants_apply(specs=parse_tenants_document(load_json("small-tenants.json")))
    cluster = cluster_get_or_create(name="cpu")
    lead = api_client(personas["security_lead"])
    for nodes, quota_findings, item8 in (
        ((_node("cpu-1", 0),), 0, "unknown"),
        ((_node("cpu-1", 0), _node("gpu-1", 2)), 1, "fail"),
    ):
        cluster_sync_from_snapshot(cluster=cluster, paths=[_cpu_world(tmp_path, *nodes)])
        posture_evaluate()
        live = Finding.objects.filter(cluster=cluster, check_id="K8S-001", status="open")
        assert live.count() == quota_findings
        rows = lead.get("/api/v1/clusters/cpu/checklist/").json()
        row = rows[7]
        assert row["status"] == item8
        if item8 == "unknown":
            assert row["evidence"]["reason"] == "no GPU node seen"
            # Item 3 alike: no GPU stack on the cluster to have inventoried.
            assert (rows[2]["status"], rows[2]["evidence"]["reason"]) == (
                "unknown",
                "no GPU node seen",
            )
    assert row["evidence"]["gpu_nodes_checked"] == 1


def test_item_2_is_unknown_where_pods_name_dra_claims_that_were_not_read():
    """Pods name DRA claims and the sync read no ResourceClaim: a claim not read may hold a
    device shared between tenants, so "no time-slicing between tenants" cannot pass."""
    facts = dict(
        synced=True,
        gpu_nodes=2,
        time_sliced_nodes=0,
        registered_checks=ALL,
        kinds_read=frozenset({"Node", "Pod", "Namespace"}),
    )
    assert statuses(ChecklistFacts(**facts))[2] == "pass"
    unread = ChecklistFacts(**facts, kinds_unread=frozenset({"ResourceClaim"}))
    item2 = cluster_checklist(unread)[1]
    assert item2.status == "unknown"
    assert "DRA resource claims the last full sync did not read" in item2.evidence["reason"]
    # A finding open still fails it.
    failing = ChecklistFacts(
        **facts, kinds_unread=frozenset({"ResourceClaim"}), open_findings={"SHARE-001": 1}
    )
    assert statuses(failing)[2] == "fail"


def test_item_3_is_unknown_with_the_count_where_other_vendors_gpus_are_not_inventoried():
    """gpuposture reads NVIDIA's stack only: AMD, Intel or Gaudi nodes leave "stack inventoried
    on every GPU node" unknown, saying how many (it said pass, having checked 1 node of 5)."""
    base = dict(synced=True, time_sliced_nodes=0, registered_checks=ALL)
    item = cluster_checklist(ChecklistFacts(**base, gpu_nodes=1, other_accelerator_nodes=4))[2]
    assert item.status == "unknown"
    assert item.evidence["accelerator_nodes_not_inventoried"] == 4
    assert item.evidence["gpu_nodes_checked"] == 1
    assert item.evidence["reason"].startswith("4 node(s) hold other vendors' GPUs")
    # Only AMD nodes: unknown for that reason, not for "no GPU node seen".
    only = cluster_checklist(ChecklistFacts(**base, gpu_nodes=0, other_accelerator_nodes=2))[2]
    assert only.status == "unknown" and only.evidence["reason"].startswith("2 node(s)")
    # A STACK-004 open still fails it.
    failing = ChecklistFacts(
        **base, gpu_nodes=1, other_accelerator_nodes=4, open_findings={"STACK-004": 1}
    )
    assert statuses(failing)[3] == "fail"
    assert statuses(ChecklistFacts(**base, gpu_nodes=1))[3] == "pass"


def test_item_8_judges_the_pools_of_other_vendors_gpus():
    """K8S-002 and K8S-001 judge AMD, Intel and Gaudi nodes: a cluster of those alone is judged
    (pass with no finding, fail with one), not "no GPU node seen"."""
    base = dict(synced=True, time_sliced_nodes=0, registered_checks=ALL, gpu_nodes=0)
    item = cluster_checklist(ChecklistFacts(**base, other_accelerator_nodes=3))[7]
    assert item.status == "pass" and item.evidence["other_accelerator_nodes_checked"] == 3
    tainted = ChecklistFacts(**base, other_accelerator_nodes=3, open_findings={"K8S-002": 1})
    assert statuses(tainted)[8] == "fail"


@pytest.mark.parametrize("number", [2, 5, 7, 9])
def test_items_judging_nvidia_alone_are_unknown_with_other_vendors_nodes(number):
    """Items 2, 5, 7 and 9 rest on checks that read NVIDIA's sharing, stack and bulletins, RBAC
    targets and holders only: with AMD, Intel or Gaudi nodes they said pass without having
    looked at them. Now unknown, naming the count and what was not read; a finding open still
    fails them."""
    base = dict(
        synced=True,
        time_sliced_nodes=0,
        registered_checks=ALL,
        gpu_nodes=2,
        bulletins=3,
        days_since_bulletin_import=1,
        telemetry_samples=1,
        telemetry_span_hours=7 * 24,  # item 9: the GPUs watched over LEAK-001's whole window
    )
    assert statuses(ChecklistFacts(**base))[number] == "pass"
    item = cluster_checklist(ChecklistFacts(**base, other_accelerator_nodes=3))[number - 1]
    assert item.status == "unknown"
    assert item.evidence["accelerator_nodes_not_judged"] == 3
    assert item.evidence["reason"].startswith("3 node(s) hold other vendors' GPUs")
    assert "only the 2 NVIDIA GPU node(s) were checked" in item.evidence["reason"]
    check = {2: "SHARE-001", 5: "STACK-005", 7: "K8S-004", 9: "LEAK-001"}[number]
    failing = ChecklistFacts(**base, other_accelerator_nodes=3, open_findings={check: 1})
    item = cluster_checklist(failing)[number - 1]
    assert (item.status, item.evidence["accelerator_nodes_not_judged"]) == ("fail", 3)


def test_item_5_says_why_for_a_cluster_of_amd_nodes_only():
    """Bulletins imported, no NVIDIA node, AMD nodes: "no node past the patch SLA" said pass
    with gpu_nodes_checked 0. Unknown: their stack is not read, only NVIDIA's bulletins are."""
    facts = ChecklistFacts(
        synced=True,
        gpu_nodes=0,
        time_sliced_nodes=0,
        registered_checks=ALL,
        bulletins=5,
        days_since_bulletin_import=2,
        other_accelerator_nodes=2,
    )
    item = cluster_checklist(facts)[4]
    assert item.status == "unknown"
    assert "only NVIDIA's bulletins are judged" in item.evidence["reason"]
    # No bulletin imported: its own reason stays, the count is added.
    none = cluster_checklist(ChecklistFacts(**{**facts.__dict__, "bulletins": 0}))[4]
    assert none.evidence == {
        "reason": "patch status needs imported bulletins",
        "accelerator_nodes_not_judged": 2,
    }


def test_a_cpu_only_cluster_keeps_its_truthful_items_and_item_9_says_no_gpu():
    """No GPU of any vendor: items 2 and 5 pass (no time-slicing, no node past the SLA: true),
    3 and 8 say no GPU node was seen, and item 9 says the same instead of asking for DCGM
    telemetry a cluster without GPUs cannot have."""
    facts = ChecklistFacts(
        synced=True,
        gpu_nodes=0,
        time_sliced_nodes=0,
        registered_checks=ALL,
        bulletins=5,
        days_since_bulletin_import=2,
    )
    items = cluster_checklist(facts)
    assert [items[n - 1].status for n in (2, 5, 7)] == ["pass"] * 3
    for n in (3, 8, 9):
        assert (items[n - 1].status, items[n - 1].evidence["reason"]) == (
            "unknown",
            "no GPU node seen",
        )
    assert not any("accelerator_nodes_not_judged" in i.evidence for i in items)
