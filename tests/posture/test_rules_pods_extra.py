"""POD-006..011 over hand-built pods: tables of positive and negative cases."""

from __future__ import annotations

import dataclasses
import json

import pytest

import posture.rules  # noqa: F401  (registers the existing checks)
import posture.rules.pod  # noqa: F401
from inventory.snapshot import Container, EnvVar, Taint
from posture.exemptions import Exemption
from posture.inputs import TenantInfo
from posture.rules.pod.images import approved_by, parse_image
from posture.rules.registry import run_checks
from tests.posture.builders import (
    container,
    container_entry,
    container_names,
    env,
    gpu_node,
    inputs,
    pod,
    run,
    tenant,
    trust_class,
)

TEAM = tenant("team", namespaces=("team-a",))
DIGEST = "sha256:" + "a" * 64
GPU = {"nvidia.com/gpu": 1}


NODE = gpu_node()


def _run(check_id: str, *pods, tenants=(TEAM,), nodes=(NODE,)):
    return run(check_id, inputs(pods=pods, tenants=tenants, nodes=nodes))


def _c(name: str = "main", **fields) -> Container:
    return Container(
        name=name, image=fields.pop("image", f"registry.example.com/{name}:1"), **fields
    )


# --- POD-006 -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requests", "limits", "fires"),
    [
        ({"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"}, False),
        ({}, {"nvidia.com/gpu": "2"}, False),  # requests default to limits
        ({"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": " 01"}, False),
        ({"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "2"}, True),
        ({"nvidia.com/gpu": "1"}, {}, True),  # a request without a limit
        ({"nvidia.com/gpu.shared": "2"}, {"nvidia.com/gpu.shared": "1"}, True),
        ({"nvidia.com/mig-1g.10gb": "1"}, {}, True),
        ({"nvidia.com/mig-1g.10gb": "1"}, {"nvidia.com/gpu": "1"}, True),
        ({}, {}, False),
    ],
)
def test_pod006_requests_against_limits(requests, limits, fires):
    c = _c(gpu_requests=requests, gpu_limits=limits)
    assert bool(_run("POD-006", pod("team-a", containers=(c,)))) is fires


def test_pod006_init_container_has_its_own_path():
    init = _c("prep", init=True, gpu_requests={"nvidia.com/gpu": "1"})
    main = _c("main", gpu_limits={"nvidia.com/gpu": "1"})
    (draft,) = _run("POD-006", pod("team-a", containers=(main, init)))
    assert (draft.key, container_names(draft)) == ("", ["prep"])
    (mismatch,) = container_entry(draft)["mismatches"]
    assert mismatch["field"] == 'spec.initContainers[0].resources.requests["nvidia.com/gpu"]'
    assert (mismatch["limit"], mismatch["problem"]) == (None, "request without a limit")


def test_pod006_platform_namespace_excluded():
    c = _c(gpu_requests={"nvidia.com/gpu": "1"})
    assert _run("POD-006", pod("kube-system", containers=(c,))) == []


# --- POD-007 -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "registry", "repository", "tag", "digest"),
    [
        ("busybox", "docker.io", "docker.io/library/busybox", None, None),
        ("busybox:1.36", "docker.io", "docker.io/library/busybox", "1.36", None),
        ("bitnami/redis:7", "docker.io", "docker.io/bitnami/redis", "7", None),
        ("index.docker.io/library/nginx", "docker.io", "docker.io/library/nginx", None, None),
        ("localhost/x:1", "localhost", "localhost/x", "1", None),
        ("nvcr.io/nvidia/cuda:12.4.1-base", "nvcr.io", "nvcr.io/nvidia/cuda", "12.4.1-base", None),
        (
            f"registry.example.internal:5000/x@{DIGEST}",
            "registry.example.internal:5000",
            "registry.example.internal:5000/x",
            None,
            DIGEST,
        ),
        (
            f"registry.example.internal:5000/team/x:2@{DIGEST}",
            "registry.example.internal:5000",
            "registry.example.internal:5000/team/x",
            "2",
            DIGEST,
        ),
    ],
)
def test_parse_image(image, registry, repository, tag, digest):
    ref = parse_image(image)
    assert (ref.registry, ref.repository, ref.tag, ref.digest) == (
        registry,
        repository,
        tag,
        digest,
    )


@pytest.mark.parametrize(
    ("image", "approved", "matches"),
    [
        ("busybox", ("docker.io",), True),
        ("busybox", ("docker.io/library",), True),
        ("busybox", ("docker.io/bitnami",), False),
        ("nvcr.io/nvidia/cuda:12", ("nvcr.io/nvidia",), True),
        ("nvcr.io/nvidia-evil/cuda:12", ("nvcr.io/nvidia",), False),  # prefix by path segment
        ("NVCR.IO/nvidia/cuda:12", ("https://nvcr.io/",), True),
        ("registry.example.internal:5000/x", ("registry.example.internal:5000",), True),
        ("registry.example.internal:5000/x", ("registry.example.internal",), False),
        ("registry.example.internal.evil.com/x", ("registry.example.internal",), False),
    ],
)
def test_approved_by(image, approved, matches):
    assert (approved_by(parse_image(image), approved) is not None) is matches


def _strict(registries=("registry.example.internal:5000",), digest=True) -> TenantInfo:
    cls = dataclasses.replace(
        trust_class("external"), approved_registries=registries, require_image_digest=digest
    )
    return dataclasses.replace(tenant("ext", "external"), trust_class=cls)


@pytest.mark.parametrize(
    ("image", "registries", "digest", "problems"),
    [
        (
            f"registry.example.internal:5000/x@{DIGEST}",
            ("registry.example.internal:5000",),
            True,
            0,
        ),
        ("registry.example.internal:5000/x:1", ("registry.example.internal:5000",), True, 1),
        (f"busybox@{DIGEST}", ("registry.example.internal:5000",), True, 1),
        ("busybox", ("registry.example.internal:5000",), True, 2),
        ("busybox", ("registry.example.internal:5000",), False, 1),
        ("busybox", (), True, 1),  # digest only
        ("busybox@sha256:abc", (), True, 1),  # not a full digest
        ("busybox", (), False, 0),  # no requirement: the check does not apply
    ],
)
def test_pod007_table(image, registries, digest, problems):
    ext = _strict(registries, digest)
    drafts = _run("POD-007", pod("ext", containers=(_c(image=image),)), tenants=(ext,))
    assert len(drafts) == (1 if problems else 0)
    if problems:
        assert len(container_entry(drafts[0])["problems"]) == problems


def test_pod007_evidence_and_one_finding_listing_each_container_including_init():
    ext = _strict()
    init = _c("fetch", init=True, image="busybox")
    main = _c("main", image=f"registry.example.internal:5000/x@{DIGEST}")
    side = _c("side", image="registry.example.internal:5000/side:1")
    drafts = _run("POD-007", pod("ext", containers=(main, side, init)), tenants=(ext,))
    (draft,) = drafts
    assert container_names(draft) == ["side", "fetch"]
    fetch = container_entry(draft, "fetch")
    assert (fetch["field"], fetch["init_container"]) == ("spec.initContainers[0].image", True)
    assert fetch["registry"] == "docker.io"
    assert fetch["repository"] == "docker.io/library/busybox"
    assert draft.evidence["approved_registries"] == ["registry.example.internal:5000"]
    assert draft.title.startswith(
        "Containers side, fetch of Pod ext/p run registry.example.internal:5000/side:1, busybox: "
    )


def test_pod007_platform_namespace_excluded():
    ext = _strict()
    assert (
        _run("POD-007", pod("kube-system", containers=(_c(image="busybox"),)), tenants=(ext,)) == []
    )


# --- POD-008 -------------------------------------------------------------------------------

# Real-shaped, made up here (AWS's documented example keys fire too: see
# test_pod008_documented_examples.py).
SECRET = "tq3V9d/Lr8ZkP0xWm2YbN7cH4uJ+eA6sGf1RiT5o"


@pytest.mark.parametrize(
    ("var", "fires"),
    [
        (env("AWS_SECRET_ACCESS_KEY", SECRET), True),
        (env("aws_secret_access_key", SECRET), True),
        (env("HF_TOKEN", SECRET), True),
        (env("OPENAI_API_KEY", SECRET), True),
        # Far shorter than any key those vendors issue: a word, no credential.
        (env("HF_TOKEN", "hf_x"), False),
        (env("OPENAI_API_KEY", "sk-x"), False),
        (env("AZURE_CLIENT_SECRET", "Fq88Q~r2kVw9LmT4bZ0cN7yH3jD6sXgP1uE5aKo"), True),
        (env("AWS_SECRET_ACCESS_KEY", None, "secretKeyRef:aws/secret"), False),
        (env("AWS_SECRET_ACCESS_KEY", ""), False),
        (env("AWS_SECRET_ACCESS_KEY", "   "), False),
        (env("GOOGLE_APPLICATION_CREDENTIALS", "/var/secrets/key.json"), False),  # a path
        (env("AWS_REGION", "eu-west-1"), False),
    ],
)
def test_pod008_table(var, fires):
    c = _c(env=(var,))
    assert bool(_run("POD-008", pod("team-a", containers=(c,)))) is fires


def test_pod008_evidence_never_holds_the_value():
    c = _c("init", init=True, env=(env("X", "1"), env("AWS_SECRET_ACCESS_KEY", SECRET)))
    (draft,) = _run("POD-008", pod("team-a", containers=(c,)))
    assert SECRET not in json.dumps(draft.evidence) and SECRET not in draft.title
    assert container_entry(draft)["variables"] == [
        {
            "name": "AWS_SECRET_ACCESS_KEY",
            "field": "spec.initContainers[0].env[1].value",
            "rule": "name:AWS_SECRET_ACCESS_KEY",
            "kind": "a variable SDKs read a secret from",
            "hint": None,
            "value_length": len(SECRET),
        }
    ]


def test_pod008_platform_namespace_excluded():
    c = _c(env=(env("AWS_SECRET_ACCESS_KEY", SECRET),))
    assert _run("POD-008", pod("monitoring", containers=(c,))) == []


def test_subject_labels_carry_pod_labels_so_exemptions_by_label_work():
    c = _c(env=(env("HF_TOKEN", SECRET),))
    p = pod("team-a", containers=(c,), labels={"app": "loader"})
    world = inputs(pods=(p,), tenants=(TEAM,))
    (draft,) = run("POD-008", world)
    assert draft.subject_labels == {"app": "loader"}
    exempt = Exemption(1, "POD-008", labels={"app": "loader"}, reason="rotating")
    assert run_checks(dataclasses.replace(world, exemptions=(exempt,)), only=["POD-008"]) == []


# --- POD-009 -------------------------------------------------------------------------------

EXT = tenant("ext", "external")
EXT_TAINT = Taint("gpuposture.io/trust-class", "external", "NoSchedule")


@pytest.mark.parametrize(
    ("who", "taints", "gpu", "fires"),
    [
        (EXT, (EXT_TAINT,), GPU, False),
        (EXT, (Taint("gpuposture.io/trust-class", "external", "NoExecute"),), GPU, False),
        (EXT, (Taint("gpuposture.io/trust-class", "internal", "NoSchedule"),), GPU, True),
        (EXT, (Taint("gpuposture.io/trust-class", "external", "PreferNoSchedule"),), GPU, True),
        (EXT, (Taint("nvidia.com/gpu", "present", "NoSchedule"),), GPU, True),
        (EXT, (), {"nvidia.com/mig-1g.10gb": 1}, True),
        (EXT, (), None, False),  # not a GPU pod
        (TEAM, (), GPU, False),  # internal: no dedicated pool required
    ],
)
def test_pod009_table(who, taints, gpu, fires):
    ns = who.namespaces[0]
    node = gpu_node(taints=taints)
    assert bool(_run("POD-009", pod(ns, gpu=gpu), tenants=(who,), nodes=(node,))) is fires


def test_pod009_unscheduled_pod_or_unknown_node_not_judged():
    assert _run("POD-009", pod("ext", node=None, gpu=GPU, phase="Pending"), tenants=(EXT,)) == []
    assert _run("POD-009", pod("ext", node="gone", gpu=GPU), tenants=(EXT,)) == []


def test_pod009_evidence():
    node = gpu_node(taints=(Taint("gpuposture.io/trust-class", "internal", "NoSchedule"),))
    tol = ({"key": "gpuposture.io/trust-class", "operator": "Exists"},)
    (draft,) = _run("POD-009", pod("ext", gpu=GPU, tolerations=tol), tenants=(EXT,), nodes=(node,))
    assert draft.evidence["expected_taints"][0].startswith("gpuposture.io/trust-class=external:")
    # What differs per replica (its node) is in the pod's entry.
    assert draft.evidence["pods"][0]["node_taints"] == [
        "gpuposture.io/trust-class=internal:NoSchedule"
    ]
    assert draft.evidence["tolerations"] == [dict(tol[0])]


# --- POD-010 -------------------------------------------------------------------------------

OTHER = tenant("other", namespaces=("other-a",))


def _job(ns: str, name: str, sa: str = "default", gpu=GPU, **labels: str):
    return pod(ns, name, gpu=gpu, service_account=sa, labels=dict(labels))


def test_pod010_shared_namespace_runs_two_tenants_under_one_account():
    pods = (
        _job("batch", "a", "runner", **{"gpuposture.io/tenant": "team", "job": "x", "app": "b"}),
        _job("batch", "b", "runner", **{"gpuposture.io/tenant": "other", "job": "y", "app": "b"}),
    )
    # One cause (the shared account), one finding for both tenants.
    (draft,) = _run("POD-010", *pods, tenants=(TEAM, OTHER))
    assert draft.tenants == ("other", "team")
    assert (draft.subject_kind, draft.subject_namespace, draft.subject_name) == (
        "ServiceAccount",
        "batch",
        "runner",
    )
    other, team = draft.evidence["parties"]
    assert (other["party"], team["party"]) == ("other", "team")
    assert team["pods"][0]["pod"] == "batch/a" and team["pod_count"] == 1
    assert draft.subject_labels == {"app": "b"}  # the labels every tenant pod carries
    assert draft.exposure == 2
    assert draft.tenant_exposures == {"other": 1, "team": 1}  # each tenant's own share


@pytest.mark.parametrize(
    ("pods", "fired_for"),
    [
        # Same SA name in each tenant's own namespace: separate identities.
        ((_job("team-a", "a"), _job("other-a", "b")), []),
        # One tenant alone in its namespace.
        ((_job("team-a", "a"), _job("team-a", "b")), []),
        # A tenant's GPU work under a platform namespace's account.
        ((_job("batch", "a", "runner", **{"gpuposture.io/tenant": "team"}),), ["team"]),
        # Tenant and platform pods share the account.
        (
            (
                _job("batch", "a", "runner", **{"gpuposture.io/tenant": "team"}),
                _job("batch", "p", "runner"),
            ),
            ["team"],
        ),
        # Platform-only GPU pods: nobody's tenant identity is involved.
        ((_job("batch", "a", "runner"), _job("batch", "b", "runner")), []),
        # A label naming an unknown tenant counts as platform.
        ((_job("batch", "a", "runner", **{"gpuposture.io/tenant": "ghost"}),), []),
        # Non-GPU pods are not GPU workloads.
        (
            (
                _job("batch", "a", "runner", gpu=None, **{"gpuposture.io/tenant": "team"}),
                _job("batch", "b", "runner", gpu=None, **{"gpuposture.io/tenant": "other"}),
            ),
            [],
        ),
        # The namespace label wins over the pod label in a tenant namespace.
        ((_job("team-a", "a", **{"gpuposture.io/tenant": "other"}),), []),
    ],
)
def test_pod010_table(pods, fired_for):
    drafts = _run("POD-010", *pods, tenants=(TEAM, OTHER))
    assert sorted(slug for d in drafts for slug in d.tenants) == fired_for


# --- POD-011 -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("var", "gpu", "fires"),
    [
        (EnvVar("NVIDIA_VISIBLE_DEVICES", "all"), None, True),
        (EnvVar("NVIDIA_VISIBLE_DEVICES", "0,1"), None, True),
        (EnvVar("NVIDIA_VISIBLE_DEVICES", None, "configMapKeyRef:x/y"), None, True),
        (EnvVar("NVIDIA_VISIBLE_DEVICES", "void"), None, False),
        (EnvVar("NVIDIA_VISIBLE_DEVICES", "NONE"), None, False),
        (EnvVar("NVIDIA_VISIBLE_DEVICES", ""), None, False),
        # A GPU request does not exempt it: the pod's value replaces the plugin's allocation
        # under the default device-list strategy, which nothing on this node states
        # (tests/posture/test_gpu_access_env.py judges each strategy).
        (EnvVar("NVIDIA_VISIBLE_DEVICES", "all"), GPU, True),
        (EnvVar("NVIDIA_VISIBLE_DEVICES", "all"), {"nvidia.com/mig-1g.10gb": 1}, True),
        (EnvVar("NVIDIA_VISIBLE_DEVICES", "all"), {"nvidia.com/gpu.shared": 1}, True),
        (EnvVar("NVIDIA_VISIBLE_DEVICES", "all"), {**GPU, "nvidia.com/gpumem": 4}, True),
        (EnvVar("NVIDIA_VISIBLE_DEVICES", "void"), GPU, False),
        # A limit of 0 allocates no GPU: the variable still reaches every GPU.
        (EnvVar("NVIDIA_VISIBLE_DEVICES", "all"), {"nvidia.com/gpu": 0}, True),
        # An NVIDIA Network Operator SR-IOV NIC is an nvidia.com/ resource, not a GPU.
        (EnvVar("NVIDIA_VISIBLE_DEVICES", "all"), {"nvidia.com/hostdev": 1}, True),
        (EnvVar("CUDA_VISIBLE_DEVICES", "0"), None, False),
    ],
)
def test_pod011_table(var, gpu, fires):
    c = container(gpu=gpu, env=(var,))
    assert bool(_run("POD-011", pod("team-a", containers=(c,)))) is fires


def test_pod011_sidecar_without_request_fires_even_if_main_requests():
    main = container("main", gpu=GPU)
    side = container("side", env=(env("NVIDIA_VISIBLE_DEVICES", "all"),), init=True)
    (draft,) = _run("POD-011", pod("team-a", containers=(main, side)))
    assert container_names(draft) == ["side"]
    assert container_entry(draft)["field"] == "spec.initContainers[0].env[0]"


@pytest.mark.parametrize(
    ("namespace", "node"),
    [
        ("kube-system", gpu_node()),  # platform pods are exempt by design
        ("team-a", gpu_node("cpu-1", gpu_count=None, gpu_capacity={})),  # not a GPU node
    ],
)
def test_pod011_negative_placements(namespace, node):
    c = container(env=(env("NVIDIA_VISIBLE_DEVICES", "all"),))
    p = pod(namespace, node=node.name, containers=(c,))
    assert _run("POD-011", p, nodes=(node,)) == []
