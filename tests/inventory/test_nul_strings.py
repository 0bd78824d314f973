"""A NUL (U+0000) where the Kubernetes API accepts one (an annotation, a ConfigMap's data, an
env value, args) is removed and said on the run: the database cannot store one, and a
tenant who may create a pod must not hold back the sync of the whole cluster. A NUL in a name
is still refused, naming it. DB-agnostic: the suite runs on SQLite and PostgreSQL."""

from __future__ import annotations

import copy
import json

import pytest
from django.core.management import CommandError, call_command

from inventory.models import ClusterObject, Pod, SyncRun
from inventory.sources.nul_strings import MAX_PLACES, NulReplaced, may_hold_nul, nul_replace
from inventory.sources.snapshot_file import load_snapshot_objects
from inventory.sync_summary import sync_run_summary
from posture.models import Finding
from posture.services import posture_evaluate
from tests.conftest import load_json

NOTE = "example.com/note"


def _pod(**metadata) -> dict:
    return {
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "team-a", **metadata},
        "spec": {"containers": [{"name": "c", "args": ["--x\x00y"], "env": [{"value": "\x00"}]}]},
    }


def test_nul_in_values_and_keys_is_removed_and_each_string_counted_with_its_place():
    pod = _pod(annotations={NOTE: "a\x00b\x00", "k\x00": "v", "clean": "ok"})
    found = NulReplaced()
    nul_replace([pod], found)
    assert pod["metadata"]["annotations"] == {NOTE: "ab", "k": "v", "clean": "ok"}
    container = pod["spec"]["containers"][0]
    assert container["args"] == ["--xy"] and container["env"] == [{"value": ""}]
    assert found.count == 4
    # A map's keys are its writer's text: the place stops at the map and counts.
    assert found.places == [
        "Pod team-a/p metadata.annotations (one key)",
        "Pod team-a/p metadata.annotations (one key's name)",
        "Pod team-a/p spec.containers[0].args[0]",
        "Pod team-a/p spec.containers[0].env[0].value",
    ]
    assert "\x00" not in json.dumps(pod)


def test_an_objects_own_name_and_namespace_are_left_for_normalise_to_refuse():
    pod = _pod(name="p\x00", namespace="ns\x00", annotations={"a": "\x00"})
    found = NulReplaced()
    nul_replace([pod], found)
    assert (pod["metadata"]["name"], pod["metadata"]["namespace"]) == ("p\x00", "ns\x00")
    assert found.count == 3
    # Names no Kubernetes API hands out are not shown (object_refs); nor are the values.
    assert found.places[0] == (
        "a Pod in a namespace named unlike Kubernetes names metadata.annotations (one key)"
    )


def test_the_warning_names_the_first_places_only_and_never_a_value():
    found = NulReplaced()
    secret = "hunter2-" * 100
    nul_replace([_pod(name=f"p{i}", annotations={"a": f"{secret}\x00"}) for i in range(9)], found)
    assert found.count == 9 * 3
    warning = found.warning()
    assert warning is not None and "27 strings" in warning
    assert f"and {27 - MAX_PLACES} more" in warning and "hunter2" not in warning
    assert NulReplaced().warning() is None


def test_a_place_never_names_a_key_its_writer_chose():
    """Annotation, ConfigMap data and DRA parameter keys are a tenant's text, read by other
    tenants' viewers on the run (rtself6 k36): the place stops at the map, with a count; a key
    that happens to be a field name is no field there."""
    pod = _pod(annotations={"orbit.example/run": "\x00", "nb.example/owner": "x\x00"})
    configmap = {
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "team-a"},
        "data": {"orbit-owner": "\x00", "image": "\x00"},
    }
    claim = {
        "kind": "ResourceClaim",
        "metadata": {"name": "rc", "namespace": "team-a"},
        "spec": {"devices": {"config": [{"opaque": {"parameters": {"orbitKey": "\x00"}}}]}},
    }
    found = NulReplaced()
    nul_replace([pod, configmap, claim], found)
    assert found.count == 7
    assert found.places == [
        "Pod team-a/p metadata.annotations (2 keys)",
        "Pod team-a/p spec.containers[0].args[0]",
        "Pod team-a/p spec.containers[0].env[0].value",
        "ConfigMap team-a/c data (2 keys)",
        "ResourceClaim team-a/rc spec.devices.config[0].opaque.parameters (one key)",
    ]
    warning = found.warning() or ""
    assert "orbit" not in warning and "nb.example" not in warning and "image" not in warning


def test_the_places_of_two_reads_add_up():
    first, second = NulReplaced(), NulReplaced()
    nul_replace([_pod(annotations={"a": "\x00"})], first)
    nul_replace([_pod(annotations={"b": "\x00"})], second)
    first.extend(second)
    assert first.count == 6
    assert first.places[0] == "Pod team-a/p metadata.annotations (2 keys)"


def test_a_key_that_is_no_kubernetes_field_is_never_shown():
    found = NulReplaced()
    nul_replace([{"kind": "X", "metadata": {"name": "x"}, "spec": {"k" * 500: "\x00"}}], found)
    assert found.places == ["X x spec (one key)"]


@pytest.mark.parametrize(
    ("data", "may"),
    [(b'{"a":"\\u0000"}', True), (b"\xff\xfe{\x00", True), (b'{"a":"b"}', False), ("\x00", True)],
)
def test_only_an_answer_that_may_hold_a_nul_is_walked(data, may):
    assert may_hold_nul(data) is may


def _snapshot_with_nuls() -> dict:
    snapshot = load_json("small-cluster.json")
    assert isinstance(snapshot, dict)
    for obj in snapshot["items"]:
        name = obj["metadata"]["name"]
        if name == "inference-0":  # a tenant's pod: its annotation and its container's env
            obj["metadata"]["annotations"] = {NOTE: "tenant\x00text"}
            obj["spec"]["containers"][0]["env"] = [{"name": "X", "value": "a\x00"}]
        elif name == "app-settings":
            obj["data"]["LOG_LEVEL"] = "debug\x00"
    return snapshot


@pytest.mark.django_db
def test_a_snapshot_with_nul_in_a_pod_annotation_syncs_and_the_run_says_where(
    small_world, tmp_path
):
    before = set(
        Finding.objects.filter(status="open", subject_name="inference-0").values_list("check_id")
    )
    assert before  # privileged GPU pod of an external tenant: something to still find
    path = tmp_path / "nul.json"
    path.write_text(json.dumps(_snapshot_with_nuls()))
    call_command("sync_cluster", "--cluster", "lab", "--snapshot", str(path))
    run = SyncRun.objects.filter(cluster=small_world).latest("pk")
    assert run.status == SyncRun.Status.SUCCEEDED
    [warning] = [w for w in run.warnings if "NUL" in w]
    assert warning.startswith("3 strings read held a NUL byte")
    assert "Pod beta-prod/inference-0 metadata.annotations (one key)" in warning
    assert "ConfigMap team-alpha/app-settings data (one key)" in warning
    assert "tenant" not in warning and "debug" not in warning  # values never shown
    assert NOTE not in warning and "LOG_LEVEL" not in warning  # nor a map's keys
    assert "held a NUL byte" in sync_run_summary(run)
    stored = [Pod.objects.get(cluster=small_world, name="inference-0").data]
    stored += ClusterObject.objects.filter(cluster=small_world).values_list("data", flat=True)
    assert "\x00" not in json.dumps(stored)
    posture_evaluate()
    after = set(
        Finding.objects.filter(status="open", subject_name="inference-0").values_list("check_id")
    )
    assert after == before


def test_a_yaml_snapshot_reads_its_nul_escapes_removed(tmp_path):
    path = tmp_path / "nul.yaml"
    path.write_text(
        'kind: ConfigMap\nmetadata: {name: x, namespace: team-alpha}\ndata: {a: "b\\0"}\n'
    )
    found = NulReplaced()
    objects = load_snapshot_objects([path], found)
    assert objects[0]["data"] == {"a": "b"} and found.count == 1


@pytest.mark.django_db
def test_a_nul_in_a_pod_name_still_refuses_the_snapshot_naming_it(small_world, tmp_path):
    snapshot = _snapshot_with_nuls()
    pod = copy.deepcopy(next(o for o in snapshot["items"] if o["kind"] == "Pod"))
    pod["metadata"]["name"] = "evil\x00pod"
    snapshot["items"].append(pod)
    path = tmp_path / "nul-name.json"
    path.write_text(json.dumps(snapshot))
    # Named by its namespace: a bare name would stay in view of a tenant viewer (k75).
    with pytest.raises(CommandError, match=r"\(a Pod in namespace [\w-]+\) metadata.name is not a"):
        call_command("sync_cluster", "--cluster", "lab", "--snapshot", str(path))
    run = SyncRun.objects.filter(cluster=small_world).latest("pk")
    assert run.status == SyncRun.Status.FAILED and "holds a NUL byte" in run.error
    assert "\x00" not in run.error


# The secret key AWS's documentation prints, which POD-008 reports (marked as the example)
# wherever a pod carries it literally; followed by a NUL it must still read as that key.
LITERAL_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.mark.django_db
def test_a_trailing_nul_does_not_hide_a_literal_credential(small_world, tmp_path):
    """The NUL is removed, not replaced by a marker: the value still has the shape POD-008
    looks for (rtself4 k35: a trailing NUL had hidden it)."""
    snapshot = load_json("small-cluster.json")
    for obj in snapshot["items"]:
        if obj["metadata"]["name"] == "inference-0":
            secret = {"name": "AWS_SECRET_ACCESS_KEY", "value": LITERAL_SECRET + "\x00"}
            obj["spec"]["containers"][0]["env"] = [secret]
    path = tmp_path / "secret-nul.json"
    path.write_text(json.dumps(snapshot))
    call_command("sync_cluster", "--cluster", "lab", "--snapshot", str(path))
    posture_evaluate()
    found = Finding.objects.filter(status="open", check_id="POD-008")
    assert any("inference-0" in json.dumps(f.evidence) for f in found)


@pytest.mark.django_db
def test_a_nul_in_a_label_refuses_the_snapshot_naming_it(small_world, tmp_path):
    """The API server validates labels: a NUL in one is a hand-edited file, and removing it
    would make `true<NUL>` read as the platform label's `true` (rtself4 k33). Refused, the last
    good state kept."""
    snapshot = load_json("small-cluster.json")
    snapshot["items"].append(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "nul-plat", "labels": {"gpuposture.io/platform": "true\x00"}},
        }
    )
    path = tmp_path / "nul-label.json"
    path.write_text(json.dumps(snapshot))
    with pytest.raises(CommandError, match=r"metadata.labels 'gpuposture.io/platform' holds a NUL"):
        call_command("sync_cluster", "--cluster", "lab", "--snapshot", str(path))
    run = SyncRun.objects.filter(cluster=small_world).latest("pk")
    assert run.status == SyncRun.Status.FAILED and "\x00" not in run.error


def test_a_nul_in_a_name_field_marks_it_rather_than_making_another_name():
    """NVIDIA_VISIBLE<NUL>_DEVICES must not read as NVIDIA_VISIBLE_DEVICES (rtself5 k22): the
    API server validates env names, so the marked name is one no container holds."""
    pod = _pod()
    pod["spec"]["containers"][0]["env"] = [{"name": "NVIDIA_VISIBLE\x00_DEVICES", "value": "all"}]
    found = NulReplaced()
    nul_replace([pod], found)
    assert pod["spec"]["containers"][0]["env"][0]["name"] == "NVIDIA_VISIBLE\ufffd_DEVICES"
    assert "Pod team-a/p spec.containers[0].env[0].name" in found.places
