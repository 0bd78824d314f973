"""CNI settings kept from ConfigMaps, for whether NetworkPolicy is enforced (K8S-007). PURE.

Only the one documented key is kept, never the rest of the map:

- AWS VPC CNI: the `amazon-vpc-cni` ConfigMap in kube-system turns on the network policy
  controller (`enable-network-policy-controller: "true"`), which EKS runs in its control plane
  and which turns NetworkPolicies into the PolicyEndpoints the node agent enforces. The EKS
  docs set it and the node agent's `--enable-network-policy=true` together (the add-on's
  `enableNetworkPolicy`): either alone enforces nothing (cni_enforcement.py).
- Istio: the mesh config (key `mesh` of the `istio` ConfigMap in istio-system, `istio-<rev>`
  for a revision, a YAML document) with `outboundTrafficPolicy.mode: REGISTRY_ONLY` lets
  the sidecars reach only registered services; ALLOW_ANY is Istio's default. Kept as
  {"outboundTrafficPolicy.mode": mode}; a mesh config that cannot be read keeps no mode.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpuposture.base.safe_parse import SafeParseError, load_yaml
from inventory.snapshot import ConfigMap
from inventory.sources.gpu_config import RawConfigMap
from inventory.sources.raw import mapping, text

AWS_VPC_CNI = ("kube-system", "amazon-vpc-cni")
AWS_POLICY_CONTROLLER = "enable-network-policy-controller"
# ConfigMap.purpose of a kept CNI setting.
AWS_VPC_CNI_PURPOSE = "aws_vpc_cni"
ISTIO_NAMESPACE = "istio-system"
ISTIO_MESH_PURPOSE = "istio_mesh"
OUTBOUND_MODE = "outboundTrafficPolicy.mode"
MESH_MAX_BYTES = 1_000_000  # a mesh config is a few kB


def cni_configmaps(raw: Iterable[RawConfigMap]) -> list[ConfigMap]:
    """The CNI ConfigMaps recognised, each with only its one setting (absent when unset)."""
    kept = []
    for cm in raw:
        mesh = _istio_mesh(cm)
        if mesh is not None:
            kept.append(mesh)
        if (cm.namespace, cm.name) != AWS_VPC_CNI:
            continue
        value = text(mapping(cm.data).get(AWS_POLICY_CONTROLLER), None)
        data = {} if value is None else {AWS_POLICY_CONTROLLER: value.strip().lower()}
        kept.append(
            ConfigMap(cm.namespace, cm.name, AWS_VPC_CNI_PURPOSE, keys=tuple(data), data=data)
        )
    return kept


def _istio_mesh(cm: RawConfigMap) -> ConfigMap | None:
    """Istio's mesh config with its outbound traffic mode; None for any other ConfigMap
    (istio-system also holds istio-ca-root-cert and the injector's, without a `mesh` key)."""
    if cm.namespace != ISTIO_NAMESPACE or not (cm.name == "istio" or cm.name.startswith("istio-")):
        return None
    mesh = mapping(cm.data).get("mesh")
    if not isinstance(mesh, str):
        return None
    try:
        document = load_yaml(mesh, max_bytes=MESH_MAX_BYTES)
    except SafeParseError:
        return ConfigMap(cm.namespace, cm.name, ISTIO_MESH_PURPOSE, keys=("mesh",))
    policy = mapping(mapping(document).get("outboundTrafficPolicy"))
    mode = (text(policy.get("mode"), "") or "ALLOW_ANY").strip().upper()
    return ConfigMap(
        cm.namespace, cm.name, ISTIO_MESH_PURPOSE, keys=("mesh",), data={OUTBOUND_MODE: mode}
    )
