"""PostureInputs.tenant_of_pod: every check asks it of every pod, so the common answer (a pod
of a namespace a tenant claims) comes from the namespace alone; a reservation placeholder is
still told apart by its annotations."""

from __future__ import annotations

from inventory.snapshot import Pod
from tests.posture.builders import inputs, pod, tenant

GPU = {"nvidia.com/gpu": 1}
RESERVED = {"run.ai/reserve_for_gpu_index": "GPU-1"}


def test_a_claimed_namespace_answers_without_reading_the_pod_annotations(monkeypatch):
    read: list[str] = []
    fraction = Pod.gpu_fraction

    def counting(self):
        read.append(self.name)
        return fraction.fget(self)

    monkeypatch.setattr(Pod, "gpu_fraction", property(counting))
    alpha = tenant("alpha")
    pods = (
        pod("alpha", "a", gpu=GPU),
        pod("alpha", "b", gpu=GPU),
        # the platform's reservation placeholder, and a pod copying its annotation elsewhere
        pod("kai-resource-reservation", "hold", annotations=RESERVED),
        pod("alpha", "copy", annotations=RESERVED),
    )
    world = inputs(pods=pods, tenants=(alpha,))
    owners = {p.name: world.tenant_of_pod(p) for p in pods}
    assert owners["a"] == owners["b"] == owners["copy"] == alpha
    assert owners["hold"] is None  # a placeholder: no party at all
    assert read == ["hold"]  # only the pod whose namespace could hold a placeholder
