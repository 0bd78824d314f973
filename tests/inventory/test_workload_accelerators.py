"""A workload row says which accelerators its pod holds, whatever the vendor: `gpu_resources`
in the workloads API (and the node page's "GPU resources") lists amd.com/gpu, gpu.intel.com/*
and habana.ai/gaudi as it lists nvidia.com/gpu, never `{}` for a pod holding a GPU (an
integration counting GPU workloads would miss it). The mixed cluster of
tests/posture/test_mixed_vendor_accelerators, synced; rows stored before are recomputed by
migration inventory.0030."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from inventory.models import Pod
from tests.conftest import api_client
from tests.inventory.test_other_vendor_nodes import mixed, page  # noqa: F401
from tests.posture.gpu_access_world import container, pod

pytestmark = pytest.mark.django_db
HELD = {
    "train-0": {"amd.com/gpu": 1},
    "finetune-0": {"amd.com/gpu": 2},
    "render-0": {"gpu.intel.com/xe": 1},
    "notebook-0": {"habana.ai/gaudi": 1},
}


def test_the_workloads_api_names_every_vendors_gpu_a_pod_holds(mixed, personas):  # noqa: F811
    lead = api_client(personas["security_lead"])
    rows = lead.get("/api/v1/workloads/?cluster=mixed&page_size=100").json()["results"]
    assert {r["name"]: r["gpu_resources"] for r in rows if r["name"] in HELD} == HELD
    text = page(personas["platform_engineer"], "/nodes/mixed/mi300-a/")
    assert '<span class="tag">amd.com/gpu: 2</span>' in text


def test_held_resources_count_as_the_scheduler_does_and_keep_nvidia():
    from inventory import snapshot as snap
    from inventory.sources.normalise import normalise

    item = pod(
        "ml",
        "mixed-0",
        container(gpu={"nvidia.com/gpu": "1"}),
        container("side", gpu={"aws.amazon.com/neuroncore": "2"}),
        node_name="gpu-a",
    )
    found = normalise([item]).pods[0]
    assert isinstance(found, snap.Pod)
    assert found.held_resources == {"nvidia.com/gpu": 1, "aws.amazon.com/neuroncore": 2}
    assert found.gpu_resources == {"nvidia.com/gpu": 1}


def test_rows_stored_before_are_recomputed(mixed):  # noqa: F811
    Pod.objects.update(gpu_resources={})  # as the sync stored an AMD pod before
    migration = importlib.import_module("inventory.migrations.0030_pod_gpu_resources_any_vendor")
    migration.held_resources(apps, None)
    stored = dict(Pod.objects.values_list("name", "gpu_resources"))
    assert {name: stored[name] for name in HELD} == HELD
