"""Names the Kubernetes API never hands out ('/' or a NUL byte in a node's name) are malformed
input: the snapshot or the nvidia-smi import is refused, and whatever name is already stored,
the pages that link to its node still answer."""

from __future__ import annotations

import copy
import json

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client

from inventory.models import Cluster, Node, SyncRun
from inventory.sources.normalise import SnapshotError, normalise
from tests.conftest import DATA, load_json

NODE = {"kind": "Node", "metadata": {"name": "gpu-1"}}


def _pod(name: str, namespace: str = "team-alpha", node: str = "gpu-1") -> dict:
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"nodeName": node, "containers": []},
    }


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"kind": "Node", "metadata": {"name": "a/b"}}, "items[1] (Node 'a/b') metadata.name"),
        ({"kind": "Node", "metadata": {"name": "gpu-\x00x"}}, r"(Node 'gpu-\x00x')"),
        ({"kind": "Node", "metadata": {"name": "GPU_1"}}, "DNS-1123 subdomain"),
        ({"kind": "Node", "metadata": {"name": "x" * 254}}, "at most 253 characters"),
        # An object in a namespace is named with it, or (a bad name) by it alone: never
        # by a bare name a viewer's redaction could not hide (docs/access.md).
        (_pod("p\x00<img>"), "(a Pod in namespace team-alpha) metadata.name is not a valid name"),
        (_pod("a/b"), "no '/', '%' or control characters"),
        (_pod("p", namespace="x/y"), "items[1] (Pod) metadata.namespace is not a valid name"),
        (_pod("p", namespace="ns\nx"), "(Pod) metadata.namespace is not a valid name: no '/'"),
        (_pod("p", node="a/b"), "(Pod team-alpha/p) spec.nodeName 'a/b' is not a valid name"),
        ({"kind": "Namespace", "metadata": {"name": "x/y"}}, "(Namespace 'x/y')"),
        ({"kind": "ConfigMap", "metadata": {"name": "..", "namespace": "a"}}, "not '.' or '..'"),
    ],
)
def test_a_name_the_api_would_refuse_refuses_the_snapshot_naming_the_item(bad, message):
    with pytest.raises(SnapshotError) as excinfo:
        normalise([NODE, bad])
    assert message in str(excinfo.value)
    assert "\x00" not in str(excinfo.value)  # the message is stored on the run: escaped


def test_names_the_api_allows_are_read_as_written():
    snap = normalise(
        [
            {"kind": "Node", "metadata": {"name": "ip-10-0-1-7.ec2.internal"}},
            # RBAC names carry ':'; a chart's rendered manifest may carry placeholder words.
            {"kind": "ClusterRole", "metadata": {"name": "system:aggregate-to-edit"}},
            _pod("Trainer 0", namespace="FILLED BY THE OPERATOR", node="ip-10-0-1-7.ec2.internal"),
        ]
    )
    assert [n.name for n in snap.nodes] == ["ip-10-0-1-7.ec2.internal"]
    assert [p.name for p in snap.pods] == ["Trainer 0"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("a/b", "metadata.name is not a valid name: use lowercase letters"),
        ("gpu-\u202ex\x00<script>\n", "metadata.name is not a valid name: it holds a NUL byte"),
    ],
)
def test_sync_of_a_snapshot_with_a_bad_node_name_fails_and_keeps_the_last_good_state(
    small_world, tmp_path, name, says
):
    before = sorted(Node.objects.values_list("name", flat=True))
    snapshot = load_json("small-cluster.json")
    extra = copy.deepcopy(next(o for o in snapshot["items"] if o["kind"] == "Node"))
    extra["metadata"]["name"] = name
    snapshot["items"].append(extra)
    path = tmp_path / "bad-name.json"
    path.write_text(json.dumps(snapshot))
    with pytest.raises(CommandError, match=says):
        call_command("sync_cluster", "--cluster", "lab", "--snapshot", str(path))
    assert sorted(Node.objects.values_list("name", flat=True)) == before
    run = SyncRun.objects.filter(cluster=small_world).latest("pk")
    assert run.status == SyncRun.Status.FAILED
    assert says in run.error and "\x00" not in run.error


@pytest.mark.django_db
@pytest.mark.parametrize("node", ["x/y", "gpu\x00", "GPU-1"])
def test_import_nvidia_smi_refuses_a_node_name_the_api_never_lists(node):
    xml = DATA / "nvidia-smi" / "h100-mig.xml"
    with pytest.raises(CommandError, match=r"--node .*: not a valid name: use lowercase"):
        call_command("import_nvidia_smi", "--cluster", "lab", "--node", node, str(xml))
    assert not Node.objects.exists()
    assert not Cluster.objects.filter(name="lab").exists()


@pytest.mark.django_db
def test_import_nvidia_smi_names_the_file_when_its_name_is_not_a_node_name(tmp_path):
    xml = tmp_path / "Host_A.xml"
    xml.write_bytes((DATA / "nvidia-smi" / "h100-mig.xml").read_bytes())
    with pytest.raises(CommandError, match=r"node name \(from the file name; pass --node\)"):
        call_command("import_nvidia_smi", "--cluster", "lab", str(xml))


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["a/b", "a/b/", "gpu?x#1%20", "x\x00\n<script></script>"])
def test_pages_linking_a_node_answer_whatever_name_it_was_stored_under(small_world, personas, name):
    # Stored before names were checked (or by a path not covered): the pages must not 500.
    if "\x00" in name and connection.vendor == "postgresql":
        pytest.skip("PostgreSQL cannot store a NUL byte: the reason syncs refuse one")
    node = Node.objects.filter(cluster=small_world).first()
    node.pk, node.name = None, name
    node.save()
    client = Client()
    client.force_login(personas["platform_engineer"])
    for url in ("/nodes/", "/patch/", "/"):
        response = client.get(url)
        assert response.status_code == 200, url
        assert "<script>" not in response.content.decode()
    page = client.get(f"/nodes/lab/{_quoted(name)}/")
    assert page.status_code == 200
    assert page.context["node"].name == name


def _quoted(name: str) -> str:
    from urllib.parse import quote

    return quote(name, safe="/")


def _with_label_value(value: str) -> dict:
    snapshot = load_json("small-cluster.json")
    assert isinstance(snapshot, dict)
    node = next(o for o in snapshot["items"] if o["kind"] == "Node")
    node["metadata"]["labels"]["example.com/note"] = value
    return snapshot


@pytest.mark.django_db
def test_an_escaped_backslash_before_u0000_is_not_a_nul_byte(small_world, tmp_path):
    path = tmp_path / "backslash.json"
    path.write_text(json.dumps(_with_label_value("\\u0000")))  # the six characters, no NUL
    call_command("sync_cluster", "--cluster", "lab", "--snapshot", str(path))
    node = Node.objects.get(cluster=small_world, name="gpu-ts-1")
    assert node.labels["example.com/note"] == "\\u0000"


@pytest.mark.django_db
def test_a_nul_byte_in_dcgm_text_is_refused_naming_the_line(small_world, tmp_path):
    from telemetry.models import GpuReading

    scrape = tmp_path / "nul.txt"
    scrape.write_text(
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",Hostname="gpu-ts-1",pod="p\x00"} 40\n'
    )
    with pytest.raises(CommandError, match="line 2 holds a NUL byte"):
        call_command("ingest_dcgm", str(scrape), cluster="lab")
    assert not GpuReading.objects.exists()
