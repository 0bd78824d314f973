"""sync_cluster --kubeconfig / --context and import_nvidia_smi, from the command line."""

from __future__ import annotations

import copy
import io
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from inventory.models import Cluster, Node, NodeHostFacts
from posture.models import Finding
from posture.services import posture_evaluate
from tests.conftest import DATA, load_json
from tests.kubeapi import FakeKubeAPI

pytestmark = pytest.mark.django_db
SMI = DATA / "nvidia-smi"
ENTITY_BOMB = (
    '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><nvidia_smi_log>&a;</nvidia_smi_log>'
)


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_sync_with_a_kubeconfig_and_context(tmp_path):
    with FakeKubeAPI(copy.deepcopy(load_json("small-cluster.json")["items"])) as api:
        kubeconfig = api.kubeconfig(tmp_path)
        out, _ = run(
            "sync_cluster",
            "--cluster",
            "east",
            "--kubeconfig",
            str(kubeconfig),
            "--context",
            "fake",
        )
    assert "succeeded" in out and "Pod 5" in out
    cluster = Cluster.objects.get(name="east")
    assert (cluster.source, cluster.kube_context) == ("kubeconfig", "fake")
    assert cluster.kubeconfig_path == str(kubeconfig.resolve())


def test_an_unreachable_cluster_fails_clearly(tmp_path):
    with FakeKubeAPI([]) as api:
        kubeconfig = api.kubeconfig(tmp_path)
        api.forbid("/api/v1/nodes")
        with pytest.raises(CommandError, match="previous inventory is unchanged.*403"):
            run("sync_cluster", "--cluster", "east", "--kubeconfig", str(kubeconfig))


def test_context_needs_a_kubeconfig():
    with pytest.raises(CommandError, match="--context needs --kubeconfig"):
        run("sync_cluster", "--cluster", "east", "--in-cluster", "--context", "x")


def test_nvidia_smi_fills_the_firmware_and_survives_syncs(small_world, tmp_path):
    node_file = tmp_path / "gpu-ts-1.xml"
    shutil.copy(SMI / "h100-mig.xml", node_file)
    stack = Finding.objects.get(check_id="STACK-004", tenants__slug="alpha")
    # Firmware is coverage (no bulletin names firmware here): never a STACK-004 finding.
    assert stack.evidence["unknown"] == ["container_toolkit_version"]
    out, err = run("import_nvidia_smi", "--cluster", "lab", str(node_file))
    assert "VBIOS 96.00.99.00.01" in out and not err
    node = Node.objects.get(cluster=small_world, name="gpu-ts-1")
    assert node.firmware_version == "96.00.99.00.01"
    assert node.driver_version == "550.90.07"  # the API's label wins over the host's
    # The next sync from the API keeps the host's facts.
    call_command("sync_cluster", "--cluster", "lab", "--snapshot", str(DATA / "small-cluster.json"))
    assert (
        Node.objects.get(cluster=small_world, name="gpu-ts-1").firmware_version == "96.00.99.00.01"
    )
    posture_evaluate()
    stack.refresh_from_db()
    assert stack.evidence["unknown"] == ["container_toolkit_version"]


def test_nvidia_smi_for_a_node_not_yet_synced_is_kept(small_world):
    out, err = run(
        "import_nvidia_smi", "--cluster", "lab", "--node", "gpu-new", str(SMI / "t4-old.xml")
    )
    # A host the API does not list is a node described by nvidia-smi only (DESIGN §7).
    assert "created node gpu-new, described by nvidia-smi only" in err
    assert NodeHostFacts.objects.filter(node_name="gpu-new").exists()
    assert Node.objects.get(name="gpu-new").described_by == "nvidia-smi"


@pytest.mark.parametrize(
    "content, message",
    [
        ("<html><body>login</body></html>", "nvidia_smi_log"),
        (ENTITY_BOMB, "entit"),
        ("not xml at all", "XML"),
    ],
)
def test_hostile_nvidia_smi_input_is_refused(small_world, tmp_path, content, message):
    bad = tmp_path / "gpu-ts-1.xml"
    bad.write_text(content)
    with pytest.raises(CommandError, match=message):
        run("import_nvidia_smi", "--cluster", "lab", str(bad))
    assert not NodeHostFacts.objects.exists()
    assert Node.objects.get(name="gpu-ts-1").firmware_version == ""


def test_nvidia_smi_creates_a_new_cluster_as_sync_cluster_does(tmp_path):
    _out, err = run("import_nvidia_smi", "--cluster", "nope", str(Path(SMI / "t4-old.xml")))
    assert "created cluster nope" in err
    assert Node.objects.get(cluster__name="nope", name="t4-old").gpu_model == "Tesla T4"
    with pytest.raises(CommandError, match="use lowercase"):
        run("import_nvidia_smi", "--cluster", "No_Pe", str(Path(SMI / "t4-old.xml")))
