"""An exemption by label works for every check that reports a pod: the checks are found by
evaluating a world in which each of them fires, so a new pod check is covered as soon as the
world fires it (every workload finding is built by posture/rules/subjects.py, which carries
the pod template's labels)."""

from __future__ import annotations

import dataclasses

import pytest

from inventory.snapshot import Container, Service
from posture.exemptions import Exemption
from posture.inputs import PostureInputs
from posture.rules import CHECKS
from posture.rules.registry import evaluate
from tests.posture.builders import env, gpu_node, host_path, inputs, mount, pod, tenant

LABELS = {"app": "nb", "gpuposture.io/component": "lab-tools"}
EXEMPT_BY = {"gpuposture.io/component": "lab-tools"}
GPU = {"nvidia.com/gpu": "1"}
EXT = tenant("ext", "external")
# POD-007 needs an image policy: digests required (the seed classes require none).
STRICT = dataclasses.replace(
    EXT, trust_class=dataclasses.replace(EXT.trust_class, require_image_digest=True)
)


def hostile_world() -> PostureInputs:
    """One labelled pod of an external tenant that breaks every pod rule at once, on a node
    outside its class's pool, published by a NodePort."""
    main = Container(
        name="main",
        image="registry.example.com/train:1",
        privileged=True,
        capabilities_add=("SYS_ADMIN",),
        gpu_requests={"nvidia.com/gpu": "1"},
        gpu_limits={"nvidia.com/gpu": "2"},
        volume_mounts=(mount("dev", "/host-dev"),),
        env=(
            env("HF_TOKEN", "hf_LabLiteral7Kq2mZ9xW4vR8tY3nP6sB1cD"),
            env("NVIDIA_MIG_CONFIG_DEVICES", "all"),
        ),
    )
    notebook = Container(
        name="nb",
        image="quay.io/jupyter/base-notebook:2024-10-02",
        ports=(8888,),
        args=("start-notebook.py", "--ServerApp.token=", "--ServerApp.password="),
        env=(env("NVIDIA_VISIBLE_DEVICES", "all"),),
    )
    hostile = pod(
        "ext",
        "nb-0",
        containers=(main, notebook),
        host_pid=True,
        volumes=(host_path("dev", "/dev"),),
        labels=LABELS,
    )
    published = Service("ext", "nb", "NodePort", {"app": "nb"}, (8888,))
    return inputs(nodes=(gpu_node(),), pods=(hostile,), tenants=(STRICT,), services=(published,))


WORLD = hostile_world()
POD_CHECKS = sorted(
    check_id
    for check_id, check in CHECKS.items()
    if any(d.subject_kind == "Pod" for d in check.evaluate(WORLD))
)


def test_the_world_fires_every_pod_check_we_know():
    # A floor, so a world that stops firing one cannot shrink the parametrised test silently.
    known = {f"POD-00{n}" for n in range(1, 10)} | {"POD-011", "K8S-006"}
    assert known <= set(POD_CHECKS)


@pytest.mark.parametrize("check_id", POD_CHECKS)
def test_an_exemption_by_label_exempts_every_pod_finding_of_the_check(check_id):
    fired = [d for d in evaluate(WORLD, only=[check_id]).drafts if d.subject_kind == "Pod"]
    assert fired and all(d.subject_labels == LABELS for d in fired)

    other_label = Exemption(1, check_id, labels={"gpuposture.io/component": "elsewhere"})
    kept = evaluate(dataclasses.replace(WORLD, exemptions=(other_label,)), only=[check_id])
    assert [d for d in kept.drafts if d.subject_kind == "Pod"] == fired

    by_label = Exemption(2, check_id, labels=EXEMPT_BY, reason="lab tooling")
    result = evaluate(dataclasses.replace(WORLD, exemptions=(by_label,)), only=[check_id])
    assert not [d for d in result.drafts if d.subject_kind == "Pod"]
    assert [d for d, exemption_id in result.exempted if exemption_id == 2] == fired


def test_each_finding_is_matched_against_its_own_check_exemptions_only(monkeypatch):
    """A cluster's exemptions each name one check: a finding is held against those of its
    check (the first that matches wins, as listed), not against every exemption of the cluster
    (thousands of findings times every exemption)."""
    tried: list[int] = []
    real = Exemption.matches

    def counting(self, *args):
        tried.append(self.id)
        return real(self, *args)

    monkeypatch.setattr(Exemption, "matches", counting)
    others = tuple(Exemption(10 + n, "K8S-001", name=f"x{n}") for n in range(5))
    first = Exemption(2, "POD-001", labels=EXEMPT_BY)
    second = Exemption(3, "POD-001", namespace="ext")  # matches too: the first listed wins
    world = dataclasses.replace(WORLD, exemptions=(*others, first, second))
    result = evaluate(world, only=["POD-001"])
    exempted = [(d.check_id, d.subject_name, exemption) for d, exemption in result.exempted]
    assert exempted == [("POD-001", "nb-0", 2)]
    assert tried == [2]
