"""Hand-built pack inputs and pods for the enforcement tests (no database)."""

from __future__ import annotations

import copy

from enforcement.build import build_pack
from enforcement.inputs import PackInputs, TenantPack
from posture.exemptions import Exemption

KEY = "gpuposture.io/trust-class"
POOL_TOLERATION = {"key": KEY, "operator": "Equal", "value": "sensitive", "effect": "NoSchedule"}
VISIBLE = "NVIDIA_VISIBLE_DEVICES"

ALPHA = TenantPack(
    slug="alpha",
    trust_class="internal",
    namespaces=("team-alpha",),
    principals=("group:alpha-devs", "user:ana@example.com"),
    approved_modes=("mig_ci",),
    unapproved_resources=("nvidia.com/gpu-ts", "nvidia.com/gpumem"),
    visible_devices_configmaps=("team-alpha/gpu-env",),
    foreign_taints=((KEY, "sensitive"), (KEY, "external")),
)
SECURE = TenantPack(
    slug="secure",
    trust_class="sensitive",
    namespaces=("secure-ml",),
    approved_modes=("time_slicing",),
    pool_taint=(KEY, "sensitive"),
    foreign_taints=((KEY, "internal"), (KEY, "external")),
)
INPUTS = PackInputs(
    cluster="lab",
    tenants=(ALPHA, SECURE),
    exemptions=(Exemption(id=7, check_id="POD-003", namespace="team-alpha", name="log-agent"),),
)


def pack(dialect: str, mode: str = "audit", inputs: PackInputs = INPUTS) -> list[dict]:
    return build_pack(inputs, dialect=dialect, mode=mode)


def pod(namespace: str = "team-alpha", name: str = "train-7f9c", **spec: object) -> dict:
    """A GPU pod that every rule admits for tenant alpha (and, with `pool` placement, for
    secure), with `spec` fields replacing the defaults."""
    base = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "train"}},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "registry.example.com/train@sha256:" + "a" * 64,
                    "resources": {
                        "requests": {"nvidia.com/gpu": "1", "cpu": "2"},
                        "limits": {"nvidia.com/gpu": "1", "cpu": "2"},
                    },
                    "securityContext": {"capabilities": {"drop": ["ALL"]}},
                }
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
        },
    }
    base["spec"].update(copy.deepcopy(spec))
    return base


def pooled(namespace: str = "secure-ml", **spec: object) -> dict:
    """A pod placed in the sensitive class's pool."""
    return pod(
        namespace,
        tolerations=[
            {"key": KEY, "operator": "Equal", "value": "sensitive", "effect": "NoSchedule"}
        ],
        nodeSelector={KEY: "sensitive"},
        **spec,
    )


def container(**fields: object) -> list[dict]:
    """The default container with `fields` replaced."""
    c = copy.deepcopy(pod()["spec"]["containers"][0])
    c.update(fields)
    return [c]
