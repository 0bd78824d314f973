"""The MIG partitioner's page and API: placement on the memory-slice grid, clear refusals,
compute-instance splits with SHARE-002 / SHARE-003 warnings from the tenants' trust classes,
a node's layout loaded from its cluster's mig-parted config, the mig-parted export, and who
may use which of it."""

from __future__ import annotations

import pytest
import yaml
from django.test import Client
from django.utils import timezone

from inventory.sources.mig_parted import parse_mig_parted_yaml
from partitioner.views import instances_text, parse_instances
from tests.conftest import api_client

pytestmark = pytest.mark.django_db

ROLES = ("security_lead", "platform_engineer", "procurement", "auditor", "viewer_alpha")
CONFIG = """version: v1
mig-configs:
  all-balanced:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
  team-split:
    - devices: all
      mig-enabled: true
      mig-devices: {"1c.3g.40gb": 2}
"""


def validate(user, body):
    return api_client(user).post("/api/v1/mig/validate/", body, format="json")


def node_layout(user, **query):
    return api_client(user).get("/api/v1/mig/node-layout/", query)


def page(user, query=None):
    client = Client()
    if user is not None:
        client.force_login(user)
    return client.get("/mig/", query or {})


@pytest.fixture
def mig_cluster(small_world):
    """Cluster mig-lab: node mig-a (H100, all-balanced, runs an alpha pod), node mig-b (H100,
    team-split, runs a beta pod), node mig-c (an A30: not in our table), and the GPU
    Operator's mig-parted ConfigMap with its contents."""
    from inventory.models import Cluster, ClusterObject, Node, Pod
    from tenants.models import Tenant

    now = timezone.now()
    cluster = Cluster.objects.create(name="mig-lab")
    nodes = {}
    for name, model, config in (
        ("mig-a", "NVIDIA-H100-80GB-HBM3", "all-balanced"),
        ("mig-b", "NVIDIA-H100-80GB-HBM3", "team-split"),
        ("mig-c", "NVIDIA-A30", "all-balanced"),
    ):
        nodes[name] = Node.objects.create(
            cluster=cluster,
            name=name,
            is_gpu_node=True,
            gpu_model=model,
            gpu_count=8,
            sharing_strategy="mig",
            mig_strategy="mixed",
            mig_config=config,
            changed_at=now,
            data={"mig_config_state": "success"},
        )
    for node, tenant in (("mig-a", "alpha"), ("mig-b", "beta")):
        Pod.objects.create(
            cluster=cluster,
            namespace=f"ns-{tenant}",
            name="p",
            node=nodes[node],
            tenant=Tenant.objects.get(slug=tenant),
            phase="Running",
            changed_at=now,
        )
    ClusterObject.objects.create(
        cluster=cluster,
        kind="configmap",
        namespace="gpu-operator",
        name="default-mig-parted-config",
        data={
            "namespace": "gpu-operator",
            "name": "default-mig-parted-config",
            "purpose": "mig_parted",
            "keys": ["config.yaml"],
            "data": {"config.yaml": CONFIG},
        },
    )
    return cluster


# --- validate ------------------------------------------------------------------------------------


def test_the_api_places_instances_on_their_allowed_starts(personas):
    body = {
        "gpu_model": "NVIDIA-H100-80GB-HBM3",
        "instances": [
            {"profile": "1g.10gb", "start": 0},
            {"profile": "3g.40gb"},
            {"profile": "2g.20gb"},
        ],
    }
    answer = validate(personas["platform_engineer"], body)
    assert answer.status_code == 200
    data = answer.json()
    assert data["valid"] and data["errors"] == [] and data["warnings"] == []
    starts = {(p["profile"], p["start"], p["size"]) for p in data["placements"]}
    assert starts == {("1g.10gb", 0, 1), ("3g.40gb", 4, 4), ("2g.20gb", 2, 2)}
    assert (data["memory_slices"], data["compute_slices"]) == (8, 7)
    snippet = parse_mig_parted_yaml(data["mig_parted"])
    assert snippet.configs["custom-layout"][0].mig_devices == {
        "1g.10gb": 1,
        "2g.20gb": 1,
        "3g.40gb": 1,
    }


def test_what_does_not_fit_is_an_error_in_the_answer(personas):
    lead = personas["security_lead"]
    bad_start = {"gpu_model": "H100-80GB", "instances": [{"profile": "3g.40gb", "start": 2}]}
    answer = validate(lead, bad_start).json()
    assert not answer["valid"] and "0 or 4" in " ".join(answer["errors"])
    assert answer["mig_parted"] is None
    unknown = validate(lead, {"gpu_model": "NVIDIA-GeForce-RTX-4090", "instances": []}).json()
    assert not unknown["valid"] and unknown["errors"]
    too_many = {"gpu_model": "A100-40GB", "instances": [{"profile": "3g.20gb"}] * 3}
    assert not validate(lead, too_many).json()["valid"]
    garbage = validate(lead, {"gpu_model": "H100-80GB", "instances": "x"})
    assert garbage.status_code == 400
    bad_ci = {
        "gpu_model": "H100-80GB",
        "instances": [
            {"profile": "3g.40gb", "compute_instances": [{"profile": "2c"}, {"profile": "2c"}]},
        ],
    }
    answer = validate(lead, bad_ci).json()
    assert not answer["valid"]
    assert answer["errors"][0] == (
        "GPU instance 1 (3g.40gb): its compute instances need 4 compute slices "
        "(2c.3g.40gb + 2c.3g.40gb), a 3g.40gb GPU instance has 3"
    )


def test_compute_instances_of_one_gi_for_two_tenants_warn_share_002_and_003(small_world, personas):
    body = {
        "gpu_model": "H100-80GB",
        "config_name": "ab",
        "instances": [
            {
                "profile": "3g.40gb",
                "tenant": "alpha",
                "compute_instances": [
                    {"profile": "1c.3g.40gb", "tenant": "alpha"},
                    {"profile": "2c", "tenant": "beta"},
                ],
            },
            {"profile": "3g.40gb", "start": 0, "tenant": "beta"},
        ],
    }
    data = validate(personas["platform_engineer"], body).json()
    assert data["valid"]  # it fits; the warnings are about who shares it
    (gi,) = [p for p in data["placements"] if p["tenant"] == "alpha"]
    assert (gi["start"], gi["index"]) == (4, 0)
    assert gi["compute_instances"] == [
        {"profile": "1c.3g.40gb", "slices": 1, "tenant": "alpha"},
        {"profile": "2c.3g.40gb", "slices": 2, "tenant": "beta"},
    ]
    details = [
        (w["check"], w["mode"], w["tenants"], w["instance"]) for w in data["warning_details"]
    ]
    assert details == [
        ("SHARE-002", "mig_ci", ["alpha", "beta"], 0),
        ("SHARE-003", "mig_ci", ["alpha", "beta"], 0),
    ]  # internal and external both allow mig_gi between separate GPU instances
    assert data["warnings"][0].startswith("SHARE-002: 3g.40gb at 4 has compute instances for")
    assert "trust class 'internal' allows only" in data["warnings"][1]
    assert "mig-configs:\n  ab:" in data["mig_parted"]


def test_a_class_that_forbids_mig_gi_warns_share_003(small_world, personas):
    from tenants.models import Tenant

    body = {
        "gpu_model": "H100-80GB",
        "instances": [
            {"profile": "3g.40gb", "tenant": "alpha"},
            {"profile": "3g.40gb", "tenant": "beta"},
        ],
    }
    assert validate(personas["platform_engineer"], body).json()["warnings"] == []
    beta_class = Tenant.objects.get(slug="beta").trust_class
    beta_class.allowed_modes = ["exclusive"]  # whole GPUs only
    beta_class.save()
    data = validate(personas["platform_engineer"], body).json()
    assert data["valid"]
    assert data["warnings"] == [
        "SHARE-003: tenants alpha and beta share this GPU as separate MIG GPU instances "
        "(mig_gi); trust class 'external' allows only exclusive (not mig_gi)"
    ]


def test_a_tenant_viewer_cannot_learn_another_tenants_class(small_world, personas):
    body = {
        "gpu_model": "H100-80GB",
        "instances": [
            {"profile": "3g.40gb", "tenant": "alpha"},
            {"profile": "3g.40gb", "tenant": "beta"},
        ],
    }
    data = validate(personas["viewer_alpha"], body).json()
    assert data["warnings"] == [
        "SHARE-003: tenants alpha and beta share this GPU as separate MIG GPU instances "
        "(mig_gi); beta has no trust class here"
    ]


# --- node layout ---------------------------------------------------------------------------------


def test_node_layout_api_loads_the_named_config(mig_cluster, personas):
    answer = node_layout(personas["platform_engineer"], cluster="mig-lab", node="mig-a")
    assert answer.status_code == 200
    data = answer.json()
    assert (data["cluster"], data["node"], data["config_name"]) == (
        "mig-lab",
        "mig-a",
        "all-balanced",
    )
    assert data["source"] == "ConfigMap gpu-operator/default-mig-parted-config key config.yaml"
    assert data["valid"] and data["model"] == "H100-80GB" and data["mig_enabled"]
    assert sorted(p["profile"] for p in data["placements"]) == [
        "1g.10gb",
        "1g.10gb",
        "2g.20gb",
        "3g.40gb",
    ]
    assert data["compute_slices_used"] == 7
    assert len(data["instances"]) == 4  # ready to post back to validate
    posted_back = {"gpu_model": data["model"], "instances": data["instances"]}
    again = validate(personas["platform_engineer"], posted_back)
    assert again.json()["placements"] == data["placements"]
    exported = parse_mig_parted_yaml(data["mig_parted"]).configs["all-balanced"][0]
    assert exported.mig_devices == {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}


def test_node_layout_with_compute_instances_and_a_custom_configmap(mig_cluster, personas):
    from inventory.models import ClusterObject

    data = node_layout(personas["auditor"], cluster="mig-lab", node="mig-b").json()
    assert data["valid"]
    assert [len(p["compute_instances"]) for p in data["placements"]] == [1, 1]
    # The GPU Operator is told to read another ConfigMap, which the sync saw without contents.
    ClusterObject.objects.create(
        cluster=mig_cluster,
        kind="gpu_operator_policy",
        name="cluster-policy",
        data={"name": "cluster-policy", "spec": {"mig_manager_config_name": "custom-mig"}},
    )
    ClusterObject.objects.create(
        cluster=mig_cluster,
        kind="configmap",
        namespace="gpu-operator",
        name="custom-mig",
        data={"purpose": "mig_parted", "keys": ["config.yaml"]},
    )
    data = node_layout(personas["auditor"], cluster="mig-lab", node="mig-a").json()
    assert data["valid"]  # found in the operator's default ConfigMap instead, and said so
    assert data["notes"][0].startswith("MIG Manager reads ConfigMap custom-mig; config")


def test_node_layout_refusals_are_clear(mig_cluster, personas):
    from inventory.models import Node

    lead = personas["security_lead"]
    missing = node_layout(lead, cluster="mig-lab", node="nope")
    assert missing.status_code == 404
    assert missing.json()["detail"] == "no node 'nope' in cluster 'mig-lab' that you can see"
    a30 = node_layout(lead, cluster="mig-lab", node="mig-c").json()
    assert not a30["valid"] and "'NVIDIA-A30' is not a MIG model" in a30["errors"][0]
    Node.objects.filter(name="mig-a").update(mig_config="team-z")
    unknown = node_layout(lead, cluster="mig-lab", node="mig-a").json()
    assert not unknown["valid"] and unknown["mig_parted"] is None
    assert unknown["errors"] == [
        "no mig-parted config named 'team-z' in this cluster (MIG Manager reads ConfigMap "
        "default-mig-parted-config; 1 mig-parted ConfigMap(s) seen)"
    ]
    assert node_layout(lead, cluster="mig-lab").status_code == 400  # node is required


def test_node_layout_is_scoped_to_what_the_user_may_see(mig_cluster, personas):
    viewer = personas["viewer_alpha"]
    assert node_layout(viewer, cluster="mig-lab", node="mig-a").status_code == 200
    hidden = node_layout(viewer, cluster="mig-lab", node="mig-b")
    assert hidden.status_code == 404  # beta's node: answered exactly like a missing one
    assert hidden.json()["detail"] == "no node 'mig-b' in cluster 'mig-lab' that you can see"
    assert node_layout(personas["procurement"], cluster="mig-lab", node="mig-a").status_code == 404
    assert node_layout(personas["no_role"], cluster="mig-lab", node="mig-a").status_code == 403
    assert node_layout(None, cluster="mig-lab", node="mig-a").status_code in (401, 403)


# --- page ----------------------------------------------------------------------------------------


def test_the_page_draws_the_grid_and_the_mig_parted_snippet(personas):
    query = {"gpu_model": "H100-80GB", "instances": "3g.40gb @4 alpha\n2g.20gb\n1g.10gb"}
    body = page(personas["auditor"], query)
    html = body.content.decode()
    assert "It fits" in html and "slice 7" in html and "mig-configs" in html
    assert 'colspan="4" class="mig-gi mig-t0"' in html and "tenant: alpha" in html
    assert "records no start slots and no tenants" in html
    refused = page(personas["auditor"], {"gpu_model": "H100-80GB", "instances": "7g.80gb\n1g.10gb"})
    assert "It does not fit" in refused.content.decode()
    empty = page(personas["auditor"]).content.decode()
    assert "GPU model" in empty and "It fits" not in empty


def test_the_page_shows_compute_instances_and_warnings(small_world, personas):
    text = "3g.40gb @4 alpha ; 1c alpha ; 2c beta\n3g.40gb beta"
    html = page(personas["platform_engineer"], {"gpu_model": "H100-80GB", "instances": text})
    html = html.content.decode()
    assert "<li>1c.3g.40gb: alpha</li>" in html and "<li>2c.3g.40gb: beta</li>" in html
    assert '<span class="sev sev-high">SHARE-002</span>' in html
    assert '<span class="sev sev-high">SHARE-003</span>' in html
    assert "nvidia-smi mig -cci" in html


def test_the_page_is_progressively_enhanced_without_inline_script(personas):
    html = page(personas["auditor"], {"gpu_model": "H100-80GB", "instances": "1g.10gb"})
    html = html.content.decode()
    assert '<script src="/static/js/mig.js" defer></script>' in html
    assert '<script id="mig-data" type="application/json">' in html
    scripts = html.count("<script")
    # the json_script data, mig.js and the site-wide tables.js: no inline code, no CDN
    assert scripts == 3
    assert '<script src="/static/js/tables.js"></script>' in html
    assert "https://" not in html.split("<main>")[1]
    assert 'name="csrfmiddlewaretoken"' in html


def test_the_export_downloads_as_yaml(personas):
    text = "1g.5gb\n1g.5gb\n2g.10gb ; 1c\n3g.20gb"
    query = {"gpu_model": "A100-40GB", "config_name": "team-a", "instances": text}
    response = page(personas["auditor"], query | {"format": "yaml"})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/yaml")
    assert response["Content-Disposition"] == 'attachment; filename="team-a.yaml"'
    text = response.content.decode()
    config = yaml.safe_load(text)
    assert config["mig-configs"]["team-a"][0]["mig-devices"] == {
        "1g.5gb": 2,
        "1c.2g.10gb": 1,
        "3g.20gb": 1,
    }
    assert parse_mig_parted_yaml(text).configs["team-a"][0].gpu_instance_slices == 7
    query = {"gpu_model": "A100-40GB", "instances": "7g.40gb\n1g.5gb", "format": "yaml"}
    bad = page(personas["auditor"], query)
    assert bad.status_code == 400 and "does not fit" in bad.content.decode()


def test_the_page_loads_a_node(mig_cluster, personas):
    html = page(personas["platform_engineer"], {"cluster": "mig-lab", "node": "mig-a"})
    html = html.content.decode()
    assert "It fits" in html and "all-balanced" in html
    assert "ConfigMap gpu-operator/default-mig-parted-config key config.yaml" in html
    assert "gpu_model=H100-80GB" in html  # the download link carries the loaded layout
    same = page(personas["platform_engineer"], {"from": "mig-lab/mig-b"}).content.decode()
    assert "team-split" in same and "1c.3g.40gb" in same
    a30 = page(personas["platform_engineer"], {"from": "mig-lab/mig-c"}).content.decode()
    assert "is not a MIG model the partitioner knows" in a30


def test_the_node_list_is_limited_to_visible_nodes(mig_cluster, personas):
    lead = page(personas["security_lead"]).content.decode()
    assert 'value="mig-lab/mig-a"' in lead and 'value="mig-lab/mig-b"' in lead
    viewer = page(personas["viewer_alpha"]).content.decode()
    assert 'value="mig-lab/mig-a"' in viewer and "mig-b" not in viewer
    hidden = page(personas["viewer_alpha"], {"cluster": "mig-lab", "node": "mig-b"})
    assert "no node &#x27;mig-b&#x27; in cluster &#x27;mig-lab&#x27;" in hidden.content.decode()
    assert "team-split" not in hidden.content.decode()
    procurement = page(personas["procurement"]).content.decode()
    assert "No MIG-capable node that you can see." in procurement


def test_any_role_may_use_the_partitioner(personas):
    body = {"gpu_model": "H100-80GB", "instances": [{"profile": "7g.80gb"}]}
    for role in ROLES:
        assert page(personas[role]).status_code == 200, role
        assert validate(personas[role], body).json()["valid"], role
    assert page(personas["no_role"]).status_code == 403
    assert validate(personas["no_role"], body).status_code == 403
    anonymous = page(None)
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]
    assert validate(None, body).status_code in (401, 403)


# --- the text form ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "3g.40gb",
        "3g.40gb @4",
        "3g.40gb @4 alpha",
        "3g.40gb alpha ; 1c ; 2c beta",
        "7g.80gb ; 4c a ; 3c b\n1g.10gb @6",
    ],
)
def test_instances_text_round_trips(text: str) -> None:
    assert parse_instances(instances_text(parse_instances(text))) == parse_instances(text)


# --- query counts (STYLE rule 9) ------------------------------------------------------------------


def add_mig_nodes(count: int, viewer) -> None:
    from inventory.models import Cluster, Node, Pod
    from tenants.models import Tenant, TrustClass

    now = timezone.now()
    cluster = Cluster.objects.create(name=f"q{count}")
    internal = TrustClass.objects.get(slug="internal")
    for i in range(count):
        tenant = Tenant.objects.create(slug=f"q{count}-{i}", name=f"Q {i}", trust_class=internal)
        tenant.viewers.add(viewer)
        node = Node.objects.create(
            cluster=cluster,
            name=f"n{i}",
            gpu_model="NVIDIA-H100-80GB-HBM3",
            mig_config="all-balanced",
            changed_at=now,
        )
        Pod.objects.create(
            cluster=cluster,
            namespace=f"ns{i}",
            name="p",
            node=node,
            tenant=tenant,
            phase="Running",
            changed_at=now,
        )


@pytest.mark.parametrize(("persona", "expected"), [("security_lead", 7), ("viewer_alpha", 7)])
def test_page_queries_do_not_grow_with_nodes_or_tenants(personas, persona, expected):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = Client()
    client.force_login(personas[persona])
    query = {"gpu_model": "H100-80GB", "instances": "3g.40gb q3-0\n3g.40gb q3-1 ; 1c ; 2c q3-2"}
    counts = []
    for size in (3, 30):
        add_mig_nodes(size, personas["viewer_alpha"])
        with CaptureQueriesContext(connection) as ctx:
            assert client.get("/mig/", query).status_code == 200
        counts.append(len(ctx.captured_queries))
    # session, user, roles, tenant classes (validate), ClusterPolicies' sandbox defaults (VM
    # nodes are left out), node list, tenant slugs (editor): none per node or tenant.
    assert counts == [expected, expected]


def test_a_synced_clusters_custom_mig_parted_config_loads(tmp_path, personas):
    """End to end: the sync keeps the text of mig-parted ConfigMaps (and nothing of others),
    so a node labelled with a custom config loads its layout."""
    import json

    from inventory.models import Cluster, ClusterObject
    from inventory.services import cluster_sync_from_snapshot

    node = {
        "kind": "Node",
        "metadata": {
            "name": "h100-7",
            "labels": {
                "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                "nvidia.com/gpu.count": "8",
                "nvidia.com/mig.config": "team-split",
                "nvidia.com/mig.config.state": "success",
                "nvidia.com/mig.strategy": "mixed",
            },
        },
        "status": {"capacity": {"nvidia.com/mig-1c.3g.40gb": "16"}},
    }
    configmaps = [
        {
            "kind": "ConfigMap",
            "metadata": {"name": "custom-mig-parted-config", "namespace": "gpu-operator"},
            "data": {"config.yaml": CONFIG, "notes.sh": "echo not kept"},
        },
        {
            "kind": "ConfigMap",
            "metadata": {"name": "app-settings", "namespace": "team-alpha"},
            "data": {"token": "s3cr3t-not-kept"},
        },
    ]
    # No operator Deployment in this snapshot: the label makes gpu-operator a platform
    # namespace, where a ConfigMap may be GPU configuration.
    labels = {"gpuposture.io/platform": "true"}
    namespace = {"kind": "Namespace", "metadata": {"name": "gpu-operator", "labels": labels}}
    path = tmp_path / "snap.json"
    path.write_text(json.dumps({"kind": "List", "items": [node, namespace, *configmaps]}))
    cluster = Cluster.objects.create(name="synced")
    run = cluster_sync_from_snapshot(cluster=cluster, paths=[path])
    assert run.status == "succeeded", run.error
    stored = ClusterObject.objects.get(cluster=cluster, kind="configmap")
    assert stored.data["data"] == {"config.yaml": CONFIG}  # the script key is not kept
    assert "s3cr3t" not in json.dumps(list(ClusterObject.objects.values_list("data", flat=True)))
    data = node_layout(personas["platform_engineer"], cluster="synced", node="h100-7").json()
    assert data["valid"], data
    assert data["config_name"] == "team-split"
    assert [p["profile"] for p in data["placements"]] == ["3g.40gb", "3g.40gb"]
