"""Snapshot files: kubectl JSON Lists and YAML manifests -> objects -> ClusterSnapshot."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from inventory.sources import snapshot_file
from inventory.sources.normalise import SnapshotError
from inventory.sources.snapshot_file import load_snapshot_objects, read_snapshot
from tests.realworld import REPO_ROOT, realworld


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def gpu_node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"nvidia.com/gpu.count": "8"}},
        "status": {"capacity": {"nvidia.com/gpu": "8"}},
    }


def kube_list(*items: Any, kind: str = "List") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {"resourceVersion": ""},
        "items": list(items),
    }


def write(path: Path, content: Any) -> Path:
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def names(objects: list[dict[str, Any]]) -> list[str]:
    return [o["metadata"]["name"] for o in objects]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            kube_list(namespace("team-alpha"), gpu_node("gpu-h100-01")),
            ["team-alpha", "gpu-h100-01"],
        ),
        (namespace("team-alpha"), ["team-alpha"]),
        # Lists inside Lists (a concatenation of kubectl outputs) are flattened.
        (
            kube_list(kube_list(namespace("a"), kind="NamespaceList"), namespace("b"), kube_list()),
            ["a", "b"],
        ),
        (kube_list(), []),
    ],
)
def test_json_files(tmp_path, content, expected):
    assert names(load_snapshot_objects([write(tmp_path / "snap.json", content)])) == expected


def test_kubectl_outputs_appended_to_one_file_are_each_read(tmp_path):
    # `kubectl get nodes -o json > snap.json; kubectl get pods -A -o json >> snap.json`
    content = (
        json.dumps(kube_list(gpu_node("gpu-h100-01"), kind="List"), indent=4)
        + "\n"
        + json.dumps(kube_list(namespace("team-alpha")), indent=4)
        + "\n"
    )
    objects = load_snapshot_objects([write(tmp_path / "snap.json", content)])
    assert names(objects) == ["gpu-h100-01", "team-alpha"]


def test_something_else_between_appended_outputs_is_refused_with_where(tmp_path):
    content = (
        json.dumps(kube_list(namespace("a"))) + "\nerror: the server doesn't have a resource type\n"
    )
    with pytest.raises(SnapshotError, match=r"snap\.json: not valid JSON: .*line 2 column 1"):
        load_snapshot_objects([write(tmp_path / "snap.json", content)])


@pytest.mark.parametrize("file_name", ["snap.json", "snap.txt"])
def test_windows_powershell_utf16_output_is_read(tmp_path, file_name):
    # Windows PowerShell 5's `>` writes UTF-16 little-endian with a byte-order mark.
    text = json.dumps(kube_list(namespace("team-alpha"), gpu_node("gpu-h100-01")))
    path = tmp_path / file_name
    path.write_bytes("\ufeff".encode("utf-16-le") + text.encode("utf-16-le"))
    assert names(load_snapshot_objects([path])) == ["team-alpha", "gpu-h100-01"]


def test_an_empty_json_file_is_refused(tmp_path):
    with pytest.raises(SnapshotError, match="snap.json: not valid JSON: the file is empty"):
        load_snapshot_objects([write(tmp_path / "snap.json", "  \n")])


def test_typed_api_list_items_get_their_kind_back(tmp_path):
    # The raw API's PodList leaves kind off its items.
    pod = {"metadata": {"name": "trainer", "namespace": "team-alpha"}, "spec": {}}
    (obj,) = load_snapshot_objects([write(tmp_path / "pods.json", kube_list(pod, kind="PodList"))])
    assert obj["kind"] == "Pod"
    assert "kind" not in pod  # the caller's data is not modified


@pytest.mark.parametrize("nested", [False, True])
def test_one_page_of_a_longer_list_is_refused(tmp_path, nested):
    """`metadata.continue` set: the API's list read with a limit, one page of it. Taken whole,
    every pod on the other pages would read as gone (their findings resolved)."""
    page = {
        "apiVersion": "v1",
        "kind": "PodList",
        "metadata": {"resourceVersion": "812", "continue": "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ"},
        "items": [{"metadata": {"name": "a", "namespace": "team-a"}, "spec": {}}],
    }
    document = {"apiVersion": "v1", "kind": "List", "items": [page]} if nested else page
    path = tmp_path / "pods.json"
    path.write_text(json.dumps(document))
    with pytest.raises(SnapshotError, match="one page of a longer list"):
        load_snapshot_objects([path])
    # The last page (continue empty) is a whole list as far as it goes: read.
    page["metadata"]["continue"] = ""
    path.write_text(json.dumps(document))
    assert [o["metadata"]["name"] for o in load_snapshot_objects([path])] == ["a"]


def test_yaml_multi_document_with_null_documents(tmp_path):
    content = """\
---
apiVersion: v1
kind: Namespace
metadata:
  name: team-alpha
---
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Namespace
  metadata:
    name: team-beta
"""
    assert names(load_snapshot_objects([write(tmp_path / "ns.yaml", content)])) == [
        "team-alpha",
        "team-beta",
    ]


def test_directory_reads_json_and_yaml_at_any_depth_in_sorted_order(tmp_path):
    write(tmp_path / "b-nodes.json", kube_list(gpu_node("gpu-2")))
    write(tmp_path / "a-namespaces.yml", "kind: Namespace\nmetadata:\n  name: team-alpha\n")
    write(tmp_path / "c-more.YAML", "kind: Namespace\nmetadata:\n  name: team-gamma\n")
    write(tmp_path / "notes.txt", "not a snapshot")
    (tmp_path / "b-nested" / "deeper").mkdir(parents=True)
    write(tmp_path / "b-nested" / "deeper" / "ns.json", namespace("nested"))
    write(tmp_path / "b-nested" / "logs.txt", "{ not JSON, not read")
    (tmp_path / ".git").mkdir()
    write(tmp_path / ".git" / "hidden.json", namespace("hidden"))
    write(tmp_path / ".hidden.json", namespace("hidden"))
    extra = write(tmp_path.parent / f"{tmp_path.name}-extra.json", namespace("team-delta"))
    read: list[Path] = []
    objects = load_snapshot_objects([tmp_path, str(extra)], read=read)
    assert names(objects) == ["team-alpha", "nested", "gpu-2", "team-gamma", "team-delta"]
    assert len(read) == 5


def test_read_snapshot_end_to_end(tmp_path):
    write(tmp_path / "snap.json", kube_list(namespace("team-alpha"), gpu_node("gpu-h100-01")))
    snapshot = read_snapshot([tmp_path])
    assert [n.name for n in snapshot.nodes] == ["gpu-h100-01"]
    assert (snapshot.nodes[0].gpu_count, snapshot.counts) == (8, {"Namespace": 1, "Node": 1})


def test_a_single_path_is_accepted(tmp_path):
    path = write(tmp_path / "ns.json", namespace("team-alpha"))
    assert names(load_snapshot_objects(str(path))) == ["team-alpha"]


@pytest.mark.parametrize(
    ("file_name", "content", "message"),
    [
        ("snap.json", '{"kind": "List", "items": [', "snap.json: not valid JSON"),
        ("snap.yaml", "kind: Namespace\nmetadata: {name: [\n", "snap.yaml: not valid YAML"),
        ("snap.json", '[{"kind": "Namespace"}]', "snap.json: holds a bare list"),
        ("snap.json", '"hello"', "snap.json: holds a str value"),
        ("snap.json", "null", "snap.json: holds null"),
        ("values.yaml", "image:\n  tag: v1\n", "values.yaml: holds a mapping without a kind"),
    ],
)
def test_bad_files_name_the_file(tmp_path, file_name, content, message):
    path = write(tmp_path / file_name, content)
    with pytest.raises(SnapshotError) as excinfo:
        load_snapshot_objects([path])
    assert message in str(excinfo.value)
    assert str(tmp_path) in str(excinfo.value)


def test_file_that_is_not_text(tmp_path):
    path = tmp_path / "snap.json"
    path.write_bytes(b"\x1f\x8b\x08\x00\xff\xfe")  # a gzip header: compressed by mistake
    with pytest.raises(SnapshotError, match="snap.json: cannot be read as UTF-8 text"):
        load_snapshot_objects([path])


def test_missing_path(tmp_path):
    with pytest.raises(SnapshotError, match="no such file or directory"):
        load_snapshot_objects([tmp_path / "absent.json"])


def test_empty_directory(tmp_path):
    write(tmp_path / "README.md", "# snapshots")
    with pytest.raises(SnapshotError, match=r"no \.json/\.yaml files in .* or its folders"):
        load_snapshot_objects([tmp_path])


def test_file_over_the_size_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(snapshot_file, "MAX_FILE_BYTES", 10)
    path = write(tmp_path / "big.json", kube_list(namespace("team-alpha")))
    with pytest.raises(SnapshotError, match="big.json: .* over the 200 MB limit"):
        load_snapshot_objects([path])


def test_objects_errors_surface_from_read_snapshot(tmp_path):
    write(
        tmp_path / "snap.json",
        kube_list(namespace("a"), {"kind": "Pod", "metadata": {"name": "p"}}),
    )
    with pytest.raises(SnapshotError, match=r"items\[1\] \(Pod\) has no metadata.namespace"):
        read_snapshot([tmp_path])


# --- real third-party samples, read in place --------------------------------------------------


def test_realworld_yaml_multi_document():
    objects = load_snapshot_objects(
        [realworld("k8s-manifests", "gpu-operator-golden-driver-minimal.yaml")]
    )
    assert [o["kind"] for o in objects] == [
        "ServiceAccount",
        "Role",
        "ClusterRole",
        "RoleBinding",
        "ClusterRoleBinding",
        "ConfigMap",
        "DaemonSet",
    ]


def test_realworld_several_files_into_one_snapshot():
    snapshot = read_snapshot(
        [
            realworld("k8s-manifests", "device-plugin-privileged-with-service-account.yml"),
            realworld("mig", "gpu-operator-default-mig-parted-config-configmap.yaml"),
            realworld("gpu-operator", "clusterpolicy-olm-alm-example.json"),
        ],
        # The operator's manifests leave its namespace for it to fill in.
        configured_platform=("FILLED BY THE OPERATOR",),
    )
    assert snapshot.counts == {
        "ClusterPolicy": 1,
        "ConfigMap": 1,
        "DaemonSet": 1,
        "Namespace": 1,
        "Role": 1,
        "RoleBinding": 1,
        "ServiceAccount": 1,
    }
    assert [c.purpose for c in snapshot.configmaps] == ["mig_parted"]


def test_realworld_manifests_without_namespace_are_rejected_with_the_reason():
    path = realworld("k8s-manifests", "kubescape-host-pid-ipc-privileges__pod__input_pod.yaml")
    with pytest.raises(SnapshotError, match=r"items\[0\] \(Pod\) has no metadata.namespace"):
        read_snapshot([path])


def test_realworld_chart_values_are_not_a_snapshot():
    path = realworld("device-plugin", "helm-values.yaml")
    with pytest.raises(SnapshotError, match="helm-values.yaml: holds a mapping without a kind"):
        load_snapshot_objects([path])


def test_a_yaml_snapshot_200000_levels_deep_is_refused_without_crashing(tmp_path):
    # libyaml's C loader, which reads YAML snapshots, segfaults on this: a child process, so
    # a crash fails this test instead of ending pytest.
    path = tmp_path / "deep.yaml"
    path.write_text("[" * 200_000)
    code = (
        "import sys\n"
        "from inventory.sources.normalise import SnapshotError\n"
        "from inventory.sources.snapshot_file import load_snapshot_objects\n"
        "try:\n"
        "    load_snapshot_objects([sys.argv[1]])\n"
        "except SnapshotError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(  # noqa: S603 - our own interpreter and code
        [sys.executable, "-c", code, str(path)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == f"{path}: nested deeper than 100 levels (line 1)"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("a: &x [1]\nb: *x\n", "line 2: YAML aliases (*name) are not allowed"),
        ('{"kind": "List", "items": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    ],
)
def test_aliases_and_absurd_json_nesting_are_refused(tmp_path, content, message):
    path = tmp_path / ("snap.json" if content.startswith("{") else "snap.yaml")
    path.write_text(content)
    with pytest.raises(SnapshotError, match=re.escape(message)):
        load_snapshot_objects([path])
