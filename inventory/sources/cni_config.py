"""CNI settings kept from ConfigMaps, for whether NetworkPolicy is enforced (K8S-007). PURE.

Only the one documented key is kept, never the rest of the map:

- AWS VPC CNI: the `amazon-vpc-cni` ConfigMap in kube-system turns on the network policy
  controller (`enable-network-policy-controller: "true"`), which EKS runs in its control plane
  and which turns NetworkPolicies into the PolicyEndpoints the node agent enforces. The EKS
  docs set it and the node agent's `--enable-network-policy=true` together (the add-on's
  `enableNetworkPolicy`): either alone enforces nothing (cni_enforcement.py).
"""

from __future__ import annotations

from collections.abc import Iterable

from inventory.snapshot import ConfigMap
from inventory.sources.gpu_config import RawConfigMap
from inventory.sources.raw import mapping, text

AWS_VPC_CNI = ("kube-system", "amazon-vpc-cni")
AWS_POLICY_CONTROLLER = "enable-network-policy-controller"
# ConfigMap.purpose of a kept CNI setting.
AWS_VPC_CNI_PURPOSE = "aws_vpc_cni"


def cni_configmaps(raw: Iterable[RawConfigMap]) -> list[ConfigMap]:
    """The CNI ConfigMaps recognised, each with only its one setting (absent when unset)."""
    kept = []
    for cm in raw:
        if (cm.namespace, cm.name) != AWS_VPC_CNI:
            continue
        value = text(mapping(cm.data).get(AWS_POLICY_CONTROLLER), None)
        data = {} if value is None else {AWS_POLICY_CONTROLLER: value.strip().lower()}
        kept.append(
            ConfigMap(cm.namespace, cm.name, AWS_VPC_CNI_PURPOSE, keys=tuple(data), data=data)
        )
    return kept
