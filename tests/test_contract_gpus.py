"""DESIGN §8 lists `gpus`: the physical GPUs of the GPU nodes, counted from GFD's
`nvidia.com/gpu.count` (not the capacity time-slicing multiplies), unknown never guessed."""

from __future__ import annotations

import pytest
from django.utils import timezone

from inventory.models import Node, NodeHostFacts
from tests.conftest import api_client

pytestmark = pytest.mark.django_db


def _gpus(client, query: str = "") -> dict:
    response = client.get(f"/api/v1/gpus/{query}")
    assert response.status_code == 200, response.content
    return response.json()


def test_one_row_per_physical_gpu_not_per_time_sliced_replica(small_world, personas):
    listed = _gpus(api_client(personas["auditor"]))
    assert listed["count"] == 1 and listed["next"] is None  # paginated like every list
    gpu = listed["results"][0]
    assert gpu["cluster"] == "lab" and gpu["node"] == "gpu-ts-1" and gpu["index"] == 0
    assert gpu["sharing_strategy"] == "time_slicing" and gpu["time_slicing_replicas"] == 4
    assert gpu["gpu_model"] == "NVIDIA-H100-80GB-HBM3"  # GFD's -SHARED suffix is not the model
    assert gpu["uuid"] is None and gpu["mig_enabled"] is None  # nvidia-smi never imported


def test_uuids_come_from_nvidia_smi_when_it_saw_every_gpu(small_world, personas):
    facts = NodeHostFacts.objects.create(
        cluster=small_world,
        node_name="gpu-ts-1",
        facts={"gpu_uuids": ["GPU-1111"], "mig_enabled": False},
        imported_at=timezone.now(),
    )
    client = api_client(personas["security_lead"])
    gpu = _gpus(client)["results"][0]
    assert gpu["uuid"] == "GPU-1111" and gpu["mig_enabled"] is False
    facts.facts = {"gpu_uuids": ["GPU-1111", "GPU-2222"]}  # not the node's count: not matched
    facts.save()
    assert _gpus(client)["results"][0]["uuid"] is None


def test_a_node_with_an_unknown_count_lists_no_gpus(small_world, personas):
    Node.objects.filter(name="gpu-ts-1").update(gpu_count=None)
    assert _gpus(api_client(personas["auditor"]))["count"] == 0


def test_filters_and_scope(small_world, personas):
    client = api_client(personas["security_lead"])
    assert _gpus(client, "?cluster=lab")["count"] == 1
    assert _gpus(client, f"?cluster={small_world.id}")["count"] == 1
    assert client.get("/api/v1/gpus/?cluster=elsewhere").status_code == 400
    assert _gpus(client, "?node=gpu-ts-1")["count"] == 1
    assert _gpus(client, "?node=cpu-1")["count"] == 0  # a node, with no GPU
    assert client.get("/api/v1/gpus/?node=gpu-ts-9").status_code == 400
    assert _gpus(client, "?gpu_model=H100")["count"] == 1
    assert _gpus(client, "?gpu_model=A100")["count"] == 0
    assert client.get("/api/v1/gpus/?sharing_strategy=sometimes").status_code == 400
    assert _gpus(api_client(personas["viewer_alpha"]))["count"] == 1  # alpha's pods run there
    assert client.get("/api/v1/").json()["gpus"].endswith("/api/v1/gpus/")
