"""normalise(): what the sync keeps of every way a GPU reaches a pod — the device plugin's
per-resource sharing entries and what the node advertises of them, GPU scheduling annotations
only, and the ConfigMaps pods take NVIDIA_VISIBLE_DEVICES from (key names and that value)."""

from __future__ import annotations

import json

import pytest
import yaml

from inventory.snapshot import SharingEntry, to_json
from inventory.sources.configs import sharing_config
from inventory.sources.normalise import normalise
from inventory.sources.pods import pod_from_template
from inventory.sources.shared_resources import shared_resources
from tests.inventory.normalise_helpers import PLATFORM, configmap, ctr, node, pod

CONFIG = """\
version: v1
sharing:
  timeSlicing:
    renameByDefault: {rename_by_default}
    resources:
    - name: nvidia.com/gpu
      {rename}
      devices: {devices}
      replicas: 4
"""


def _config(devices: str = "all", rename: str = "", rename_by_default: str = "false"):
    text = CONFIG.format(
        devices=devices,
        rename=f"rename: {rename}" if rename else "",
        rename_by_default=rename_by_default,
    )
    return sharing_config("gpu-operator", "plugin-config", "any", yaml.safe_load(text))


@pytest.mark.parametrize(
    ("devices", "expected"),
    [
        ("all", SharingEntry("nvidia.com/gpu", None, 4)),
        ("2", SharingEntry("nvidia.com/gpu", None, 4, device_count=2)),
        ("[0, 1]", SharingEntry("nvidia.com/gpu", None, 4, devices=("0", "1"))),
        (
            '["GPU-8f6b4c2e-0d1a-4b5c-9e7f-112233445566", "1:0"]',
            SharingEntry(
                "nvidia.com/gpu",
                None,
                4,
                devices=("GPU-8f6b4c2e-0d1a-4b5c-9e7f-112233445566", "1:0"),
            ),
        ),
    ],
)
def test_entries_keep_name_rename_replicas_and_devices(devices, expected):
    (entry,) = _config(devices).entries
    assert entry == expected


def test_mps_wins_over_time_slicing_as_in_the_device_plugin():
    cfg = {
        "sharing": {
            "timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]},
            "mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]},
        }
    }
    config = sharing_config("ns", "cm", "k", cfg)
    assert (config.mode, config.replicas) == ("mps", 4)


@pytest.mark.parametrize(
    ("config", "capacity", "name", "devices", "units", "mixed"),
    [
        # The rename took effect: the capacity shows it; the subset is two GPUs.
        (
            _config("[0, 1]", "nvidia.com/gpu-ts"),
            {"nvidia.com/gpu": 6, "nvidia.com/gpu-ts": 8},
            "nvidia.com/gpu-ts",
            ("0", "1"),
            2,
            False,
        ),
        # No capacity to compare (a snapshot without status): the config as written.
        (_config("[0, 1]", "nvidia.com/gpu-ts"), {}, "nvidia.com/gpu-ts", ("0", "1"), 2, False),
        # The upstream plugin ignored rename and devices: every GPU replicated as nvidia.com/gpu.
        (
            _config("[0, 1]", "nvidia.com/gpu-ts"),
            {"nvidia.com/gpu": 32},
            "nvidia.com/gpu",
            (),
            8,
            False,
        ),
        (
            _config(rename_by_default="true"),
            {"nvidia.com/gpu.shared": 32},
            "nvidia.com/gpu.shared",
            (),
            8,
            False,
        ),
        # A subset with no rename: its replicas and the untouched GPUs share one name.
        (_config("2"), {"nvidia.com/gpu": 14}, "nvidia.com/gpu", ("first 2",), 2, True),
    ],
)
def test_node_resource_sharing(config, capacity, name, devices, units, mixed):
    (shared,) = shared_resources(config, capacity, 8)
    assert (shared.name, shared.devices, shared.units, shared.mixed) == (
        name,
        devices,
        units,
        mixed,
    )
    assert (shared.mode, shared.source, shared.replicas) == ("time_slicing", "nvidia.com/gpu", 4)


def test_a_config_without_sharing_replicates_nothing():
    config = sharing_config("ns", "cm", "k", {"version": "v1", "flags": {"migStrategy": "none"}})
    assert shared_resources(config, {"nvidia.com/gpu": 8}, 8) == ()


def test_node_reads_its_labelled_config_entries():
    data = {
        "ts": CONFIG.format(
            devices="[0, 1]", rename="rename: nvidia.com/gpu-ts", rename_by_default="false"
        )
    }
    labels = {"nvidia.com/gpu.count": "8", "nvidia.com/device-plugin.config": "ts"}
    capacity = {"nvidia.com/gpu": "6", "nvidia.com/gpu-ts": "8"}
    snap = normalise(
        [
            configmap("gpu-operator", "plugin-config", data),
            node("gpu-a", labels, capacity=capacity),
        ],
        **PLATFORM,
    )
    (shared,) = snap.nodes[0].resource_sharing
    assert (shared.name, shared.units) == ("nvidia.com/gpu-ts", 2)


# --- pods: GPU annotations only ---------------------------------------------------------------


def test_only_gpu_scheduling_annotations_are_kept():
    raw = pod("team-a", "nb", ctr("main"), node_name="gpu-a")
    raw["metadata"]["annotations"] = {
        "gpu-fraction": "0.5",
        "gpu-fraction-num-devices": "1",
        "hami.io/vgpu-devices-allocated": "GPU-1,NVIDIA,3000,30:;",
        "kubectl.kubernetes.io/last-applied-configuration": '{"secret": "hunter2"}',
        "vault.hashicorp.com/agent-inject-secret-db": "database/creds/app",
    }
    (result,) = normalise([raw]).pods
    assert result.annotations == {
        "gpu-fraction": "0.5",
        "gpu-fraction-num-devices": "1",
        "hami.io/vgpu-devices-allocated": "GPU-1,NVIDIA,3000,30:;",
    }
    assert "hunter2" not in to_json(result)
    assert (result.gpu_fraction, result.uses_gpu) == ({"gpu-fraction": "0.5"}, True)


def test_template_annotations_of_a_controller_are_read():
    deployment = {
        "kind": "Deployment",
        "metadata": {"name": "nb", "namespace": "team-a"},
        "spec": {
            "template": {
                "metadata": {"annotations": {"gpu-memory": "4096", "prometheus.io/scrape": "1"}},
                "spec": {"containers": [ctr("main")]},
            }
        },
    }
    assert pod_from_template(deployment).annotations == {"gpu-memory": "4096"}


# --- env from ConfigMaps ----------------------------------------------------------------------


def _env_pod(**container_fields) -> dict:
    return pod("team-a", "train", ctr("main", **container_fields), node_name="gpu-a")


def test_env_references_keep_the_object_and_key_and_the_envfrom_prefix():
    raw = _env_pod(
        env=[
            {
                "name": "NVIDIA_VISIBLE_DEVICES",
                "valueFrom": {"configMapKeyRef": {"name": "gpus", "key": "visible"}},
            },
        ],
        envFrom=[
            {"configMapRef": {"name": "settings"}, "prefix": "NVIDIA_"},
            {"secretRef": {"name": "keys"}},
        ],
    )
    (main,) = normalise([raw]).pods[0].containers
    (var,) = main.env
    assert (var.value_from, var.source, var.key) == ("configMapKeyRef", "gpus", "visible")
    assert main.env_from_sources() == [
        ("configMapRef", "settings", "NVIDIA_"),
        ("secretRef", "keys", ""),
    ]


def test_referenced_configmaps_keep_key_names_and_the_visible_devices_value_only():
    raw = _env_pod(
        env=[
            {
                "name": "NVIDIA_VISIBLE_DEVICES",
                "valueFrom": {"configMapKeyRef": {"name": "gpus", "key": "visible"}},
            }
        ],
        envFrom=[{"configMapRef": {"name": "app-env"}}],
    )
    objects = [
        raw,
        configmap("team-a", "gpus", {"visible": "all", "db_password": "hunter2"}),
        configmap("team-a", "app-env", {"NVIDIA_VISIBLE_DEVICES": "0,1", "API_KEY": "sk-live-1"}),
        configmap("team-a", "unrelated", {"NVIDIA_VISIBLE_DEVICES": "all"}),
        configmap("team-b", "gpus", {"visible": "all"}),  # another namespace's, same name
    ]
    found = {(c.namespace, c.name): c for c in normalise(objects).env_configmaps}
    assert set(found) == {("team-a", "gpus"), ("team-a", "app-env")}
    assert found[("team-a", "gpus")].keys == ("db_password", "visible")
    assert found[("team-a", "gpus")].values == {"visible": "all"}
    assert found[("team-a", "app-env")].values == {"NVIDIA_VISIBLE_DEVICES": "0,1"}
    stored = json.dumps([to_json(c) for c in found.values()])
    assert "hunter2" not in stored and "sk-live-1" not in stored


def test_envfrom_prefix_decides_which_key_becomes_the_variable():
    raw = _env_pod(envFrom=[{"configMapRef": {"name": "gpu-env"}, "prefix": "NVIDIA_"}])
    objects = [raw, configmap("team-a", "gpu-env", {"VISIBLE_DEVICES": "all", "OTHER": "x"})]
    (found,) = normalise(objects).env_configmaps
    assert found.values == {"VISIBLE_DEVICES": "all"}


@pytest.mark.parametrize(
    ("name", "rename", "expected_name", "expected_rename"),
    [
        # The plugin prefixes a bare name with nvidia.com/ (its NewResourceName), so a pod
        # asking for nvidia.com/tenant-slice holds one of these replicas.
        ("gpu", "tenant-slice", "nvidia.com/gpu", "nvidia.com/tenant-slice"),
        ("nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/gpu", "nvidia.com/gpu.shared"),
    ],
)
def test_bare_resource_names_get_the_plugins_prefix(name, rename, expected_name, expected_rename):
    cfg = {
        "sharing": {"timeSlicing": {"resources": [{"name": name, "rename": rename, "replicas": 4}]}}
    }
    (entry,) = sharing_config("ns", "cm", "k", cfg).entries
    assert (entry.name, entry.rename) == (expected_name, expected_rename)
