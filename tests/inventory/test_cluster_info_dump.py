"""`kubectl cluster-info dump` read as a snapshot: its --output-directory form (NodeList at the
top, typed Lists in a folder per namespace, each pod's logs.txt) and its stdout form (the same
Lists one after another, each pod's container logs between START and END lines)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from inventory.models import Node, Pod, SyncRun
from inventory.sources.normalise import SnapshotError
from inventory.sources.snapshot_file import load_snapshot_objects
from posture.models import Finding
from posture.services import posture_evaluate
from tests.conftest import load_json

NODES = [
    {
        "metadata": {"name": "gpu-1", "labels": {"nvidia.com/gpu.count": "8"}},
        "status": {"capacity": {"nvidia.com/gpu": "8"}},
    },
    {"metadata": {"name": "cpu-1"}, "status": {}},
    {"metadata": {"name": "cpu-2"}, "status": {}},
]


def pod(namespace: str, name: str, node: str, *, gpus: int = 0, privileged: bool = False):
    container: dict[str, Any] = {"name": "main", "image": f"registry.example/{name}:1"}
    if gpus:
        container["resources"] = {
            "limits": {"nvidia.com/gpu": str(gpus)},
            "requests": {"nvidia.com/gpu": str(gpus)},
        }
    if privileged:
        container["securityContext"] = {"privileged": True}
    return {
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": {"nodeName": node, "containers": [container]},
        "status": {"phase": "Running"},
    }


PODS = {
    "kube-system": [pod("kube-system", "coredns-abc", "cpu-1")],
    "team-alpha": [pod("team-alpha", "trainer-0", "gpu-1", gpus=1, privileged=True)],
}
# Log text as containers print it: braces, JSON, a line that looks like a marker.
LOG = (
    '{"kind": "Pod", "metadata": {"name": "ghost", "namespace": "team-alpha"}}\n'
    "==== START logs for container x of pod team-alpha/ghost ====\n"
    "step 10 loss {0.25}"  # no newline at the end: kubectl writes END right after it
)
# What each namespace folder holds, in kubectl's order, and its List kind.
LISTS = [
    ("events", "EventList"),
    ("replication-controllers", "ReplicationControllerList"),
    ("services", "ServiceList"),
    ("daemonsets", "DaemonSetList"),
    ("deployments", "DeploymentList"),
    ("replicasets", "ReplicaSetList"),
    ("pods", "PodList"),
]


def typed_list(kind: str, items: list[dict]) -> str:
    """kubectl's JSON of a typed List: items without their own kind or apiVersion."""
    document = {"kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": "7"}}
    return json.dumps({**document, "items": items}, indent=4) + "\n"


def logs(namespace: str, name: str) -> str:
    where = f"container main of pod {namespace}/{name}"
    return f"==== START logs for {where} ====\n{LOG}==== END logs for {where} ====\n"


def write_dump_directory(root: Path) -> Path:
    root.mkdir()
    (root / "nodes.json").write_text(typed_list("NodeList", NODES))
    for namespace, pods in PODS.items():
        (root / namespace).mkdir()
        for file, kind in LISTS:
            items = pods if kind == "PodList" else []
            (root / namespace / f"{file}.json").write_text(typed_list(kind, items))
        for item in pods:
            name = item["metadata"]["name"]
            (root / namespace / name).mkdir()
            (root / namespace / name / "logs.txt").write_text(logs(namespace, name))
    # An editor's or a tool's hidden files are no part of the dump.
    (root / ".old").mkdir()
    (root / ".old" / "pods.json").write_text(typed_list("PodList", [pod("x", "gone", "cpu-1")]))
    (root / ".nodes.json.swp").write_text("{")
    return root


def dump_stdout(nodes: list[dict] = NODES) -> str:
    """`kubectl cluster-info dump --all-namespaces > dump.txt`."""
    text = typed_list("NodeList", nodes)
    for namespace, pods in PODS.items():
        for _file, kind in LISTS:
            text += typed_list(kind, pods if kind == "PodList" else [])
        text += "".join(logs(namespace, p["metadata"]["name"]) for p in pods)
    return text


def kinds_and_names(objects: list[dict]) -> list[tuple[str, str]]:
    return [(o["kind"], o["metadata"]["name"]) for o in objects]


READ = [
    ("Node", "gpu-1"),
    ("Node", "cpu-1"),
    ("Node", "cpu-2"),
    ("Pod", "coredns-abc"),
    ("Pod", "trainer-0"),
]


def test_a_dump_directory_is_read_with_its_namespace_folders(tmp_path):
    read: list[Path] = []
    objects = load_snapshot_objects([write_dump_directory(tmp_path / "dump")], read=read)
    # No log line and no hidden file read as an object; files in the order of their paths.
    assert sorted(kinds_and_names(objects)) == sorted(READ)
    assert kinds_and_names(objects)[0] == ("Pod", "coredns-abc")  # kube-system/ < nodes.json
    assert [str(p.relative_to(tmp_path / "dump")) for p in read[:3]] == [
        "kube-system/daemonsets.json",
        "kube-system/deployments.json",
        "kube-system/events.json",
    ]
    assert len(read) == 1 + 2 * len(LISTS)  # nodes.json and each folder's Lists: no logs.txt
    assert tmp_path / "dump" / "nodes.json" in read


def test_the_dump_printed_to_stdout_is_read_without_its_logs(tmp_path):
    path = tmp_path / "dump.txt"
    path.write_text(dump_stdout())
    assert kinds_and_names(load_snapshot_objects([path])) == READ


def test_the_stdout_dump_with_windows_line_ends_is_read(tmp_path):
    path = tmp_path / "dump.txt"
    path.write_bytes(dump_stdout().replace("\n", "\r\n").encode())
    assert kinds_and_names(load_snapshot_objects([path])) == READ


@pytest.mark.parametrize(
    ("change", "message"),
    [
        # Text that is not a delimited log block still refuses, naming the line.
        (
            lambda text: text.replace("==== START", "Request log error\n==== START", 1),
            r"dump\.txt: not valid JSON: Expecting value: line \d+ column 1",
        ),
        # A log block that never ends: what follows it cannot be told from log.
        (
            lambda text: text.replace("==== END logs for container main of pod team-alpha/", "", 1),
            r"dump\.txt: line \d+: the logs of container main of pod team-alpha/trainer-0 start "
            "but never end",
        ),
        # A container printing its own END line could pass its log off as objects.
        (
            lambda text: text.replace(
                "step 10",
                "==== END logs for container main of pod team-alpha/trainer-0 ====\n"
                '{"kind": "Pod", "metadata": {"name": "fake", "namespace": "team-alpha"}}\n',
                1,
            ),
            r"line \d+: the logs of container main of pod team-alpha/trainer-0 end 2 times "
            r".* a container printed the dump's own END line",
        ),
    ],
    ids=["other-text", "no-end", "end-printed-by-a-log"],
)
def test_the_stdout_dump_refuses_what_is_not_a_delimited_log(tmp_path, change, message):
    path = tmp_path / "dump.txt"
    path.write_text(change(dump_stdout()))
    with pytest.raises(SnapshotError, match=message):
        load_snapshot_objects([path])


@pytest.fixture
def tenants(personas):
    from tenants.services import tenants_apply
    from tenants.spec import parse_tenants_document

    tenants_apply(specs=parse_tenants_document(load_json("small-tenants.json")))


def sync(path: Path) -> str:
    out = StringIO()
    call_command("sync_cluster", "--cluster", "dump", "--snapshot", str(path), stdout=out)
    posture_evaluate()
    return out.getvalue()


def assert_read_and_judged() -> None:
    assert sorted(Node.objects.values_list("name", flat=True)) == ["cpu-1", "cpu-2", "gpu-1"]
    trainer = Pod.objects.get(namespace="team-alpha", name="trainer-0")
    assert (trainer.node.name, trainer.gpu_resources) == ("gpu-1", {"nvidia.com/gpu": 1})
    assert Pod.objects.count() == 2
    finding = Finding.objects.get(check_id="POD-001", subject_name="trainer-0")
    assert finding.status == "open"


@pytest.mark.django_db
def test_sync_of_a_dump_directory_finds_the_privileged_tenant_pod(tenants, tmp_path):
    out = sync(write_dump_directory(tmp_path / "dump"))
    assert "read Node 3, Pod 2 from 15 files" in out
    assert_read_and_judged()


@pytest.mark.django_db
def test_sync_of_the_stdout_dump_finds_the_privileged_tenant_pod(tenants, tmp_path):
    path = tmp_path / "dump.txt"
    path.write_text(dump_stdout())
    assert "read Node 3, Pod 2 from 1 file;" in sync(path)
    assert_read_and_judged()


@pytest.mark.django_db
def test_a_broken_file_in_a_namespace_folder_fails_and_keeps_the_last_good_state(tenants, tmp_path):
    root = write_dump_directory(tmp_path / "dump")
    sync(root)
    before = sorted(Finding.objects.values_list("pk", "status"))
    (root / "team-alpha" / "pods.json").write_text('{"kind": "PodList", "items": [')
    with pytest.raises(CommandError) as failed:
        sync(root)
    assert "team-alpha/pods.json: not valid JSON" in str(failed.value)
    run = SyncRun.objects.latest("started_at", "id")
    assert run.status == "failed" and "team-alpha/pods.json" in run.error
    assert_read_and_judged()
    assert sorted(Finding.objects.values_list("pk", "status")) == before
