"""Builders for the GPU Operator and the other per-node platform components of the demo world.

Pure Python: no Django, no network.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from demo.k8s_base import (
    DCGM_EXPORTER,
    DEVICE_PLUGIN,
    DEVICE_PLUGIN_OLD,
    DRA_DRIVER,
    DRA_DRIVER_NS,
    GFD_OLD,
    GPU_OPERATOR_NS,
    MIG_MANAGER,
    NFD,
    TOOLKIT,
    VALIDATOR,
    Ids,
    Obj,
    driver_image,
    meta,
    obj,
)
from demo.k8s_nodes import NodeSpec
from demo.k8s_objects import container, deployment, host_path, pod

# --- The GPU Operator and other per-node platform components ----------------------------------


@dataclass(frozen=True)
class DaemonSetSpec:
    name: str
    container: str
    image: str  # the template's; a pod may still run an older one (OnDelete updates)
    namespace: str = GPU_OPERATOR_NS
    privileged: bool = True  # platform components legitimately are; tenant pods never
    host_paths: tuple[str, ...] = ()
    # The template's nodeSelector: the operator runs each operand only on nodes it labels
    # nvidia.com/gpu.deploy.<operand>=true (an admin may set one to false on a node).
    node_selector: tuple[tuple[str, str], ...] = ()


def deploy(operand: str) -> tuple[tuple[str, str], ...]:
    return ((f"nvidia.com/gpu.deploy.{operand}", "true"),)


# fmt: off
DS_TOOLKIT = DaemonSetSpec("nvidia-container-toolkit-daemonset", "nvidia-container-toolkit-ctr",
                           TOOLKIT, host_paths=("/run/nvidia", "/usr/local/nvidia"),
                           node_selector=deploy("container-toolkit"))
DS_PLUGIN = DaemonSetSpec("nvidia-device-plugin-daemonset", "nvidia-device-plugin", DEVICE_PLUGIN,
                          host_paths=("/var/lib/kubelet/device-plugins", "/dev"),
                          node_selector=deploy("device-plugin"))
DS_GFD = DaemonSetSpec("gpu-feature-discovery", "gpu-feature-discovery", DEVICE_PLUGIN,
                       node_selector=deploy("gpu-feature-discovery"))
DS_DCGM = DaemonSetSpec("nvidia-dcgm-exporter", "nvidia-dcgm-exporter", DCGM_EXPORTER,
                        host_paths=("/var/lib/kubelet/pod-resources",),
                        node_selector=deploy("dcgm-exporter"))
DS_VALIDATOR = DaemonSetSpec("nvidia-operator-validator", "nvidia-operator-validator", VALIDATOR,
                             node_selector=deploy("operator-validator"))
DS_MIG = DaemonSetSpec("nvidia-mig-manager", "nvidia-mig-manager", MIG_MANAGER,
                       host_paths=("/sys",), node_selector=deploy("mig-manager"))
DS_MPS = DaemonSetSpec("nvidia-device-plugin-mps-control-daemon", "mps-control-daemon-ctr",
                       DEVICE_PLUGIN, node_selector=(("nvidia.com/mps.capable", "true"),))
DS_NFD = DaemonSetSpec("gpu-operator-node-feature-discovery-worker", "worker", NFD,
                       privileged=False)
# The legacy T4 pool keeps a standalone plugin (helm chart 0.14.5) the operator does not manage.
LEGACY_POOL = (("gpuposture.io/pool", "legacy-t4"),)
DS_LEGACY_PLUGIN = DaemonSetSpec("nvidia-device-plugin-legacy-t4", "nvidia-device-plugin-ctr",
                                 DEVICE_PLUGIN_OLD, "kube-system",
                                 host_paths=("/var/lib/kubelet/device-plugins",),
                                 node_selector=LEGACY_POOL)
# GKE's own device plugin (kube-system), which reads GKE's sharing labels; its tag is a GKE build.
DS_GKE_PLUGIN = DaemonSetSpec("nvidia-gpu-device-plugin-small-cos", "nvidia-gpu-device-plugin",
                              "gke.gcr.io/nvidia-gpu-device-plugin:v0.0.35-gke.1", "kube-system",
                              host_paths=("/var/lib/kubelet/device-plugins", "/dev"))
DS_LEGACY_GFD = DaemonSetSpec("gpu-feature-discovery-legacy-t4", "gpu-feature-discovery",
                              GFD_OLD, "kube-system", node_selector=LEGACY_POOL)
# The NVIDIA DRA driver's kubelet plugin, on the pool it manages: privileged, as its chart runs it.
DRA_PATHS = ("/var/lib/kubelet/plugins", "/var/lib/kubelet/plugins_registry", "/dev")
DS_DRA_PLUGIN = DaemonSetSpec("nvidia-dra-driver-gpu-kubelet-plugin", "gpus", DRA_DRIVER,
                              DRA_DRIVER_NS, host_paths=DRA_PATHS,
                              node_selector=(("gpuposture.io/pool", "shared-dra"),))
# fmt: on


def driver_daemonset(version: str) -> DaemonSetSpec:
    # One DaemonSet per NVIDIADriver resource, named the way the operator names them.
    short = hashlib.sha256(version.encode()).hexdigest()[:10]
    return DaemonSetSpec(
        f"nvidia-gpu-driver-ubuntu22.04-{short}",
        "nvidia-driver-ctr",
        driver_image(version),
        host_paths=("/run/nvidia", "/var/log"),
        node_selector=deploy("driver"),
    )


class Platform:
    """The platform's own workloads: DaemonSet pods placed node by node (then the DaemonSets
    that own them), Deployments and one-shot pods. Never tenant workloads."""

    def __init__(self, ids: Ids) -> None:
        self.ids = ids
        self.pods: list[Obj] = []
        self.others: list[Obj] = []
        self._sets: dict[str, DaemonSetSpec] = {}

    def place(
        self,
        ds: DaemonSetSpec,
        node_name: str,
        image: str | None = None,
        env: list[Obj] | None = None,
    ) -> None:
        self._sets.setdefault(ds.name, ds)
        image = image or ds.image
        mounts = [{"mountPath": p, "name": f"host-{i}"} for i, p in enumerate(ds.host_paths)]
        security = {"privileged": True} if ds.privileged else None
        ctr = container(ds.container, image, security=security, mounts=mounts, env=env)
        labels = {"app": ds.name, "controller-revision-hash": self.ids.digest(image)[:10]}
        self.pods.append(
            pod(
                self.ids,
                f"{ds.name}-{self.ids.suffix()}",
                ds.namespace,
                node=node_name,
                containers=[ctr],
                owner=("apps/v1", "DaemonSet", ds.name),
                labels=labels,
                volumes=[host_path(f"host-{i}", p) for i, p in enumerate(ds.host_paths)],
                tolerations=[{"operator": "Exists"}],
                service_account=ds.name,
                priority_class="system-node-critical",
            )
        )

    def deploy(self, name: str, ns: str, image: str, node_name: str) -> None:
        """A one-replica Deployment (the operator itself, CoreDNS) and its pod."""
        self.others.append(deployment(self.ids, name, ns, image))
        rs = f"{name}-{self.ids.hex(10)}"
        owner = ("apps/v1", "ReplicaSet", rs)
        ctr = container(name, image)
        self.pods.append(
            pod(
                self.ids,
                f"{rs}-{self.ids.suffix()}",
                ns,
                node=node_name,
                containers=[ctr],
                owner=owner,
                labels={"app": name},
            )
        )

    def one_shot(self, node_name: str) -> None:
        """The operator's CUDA validation pod: done once per node, left as Succeeded."""
        ctr = container("cuda-validation", VALIDATOR)
        owner = ("nvidia.com/v1", "ClusterPolicy", "cluster-policy")
        self.pods.append(
            pod(
                self.ids,
                f"nvidia-cuda-validator-{self.ids.suffix()}",
                GPU_OPERATOR_NS,
                node=node_name,
                containers=[ctr],
                owner=owner,
                phase="Succeeded",
                restart_policy="OnFailure",
            )
        )

    def objects(self) -> list[Obj]:
        return self.daemonsets() + self.others + self.pods

    def daemonsets(self) -> list[Obj]:
        out = []
        for ds in self._sets.values():
            owned = [p for p in self.pods if _owned_by(p, "DaemonSet", ds.name)]
            n = len(owned)
            updated = sum(p["spec"]["containers"][0]["image"] == ds.image for p in owned)
            template = {
                "metadata": {"labels": {"app": ds.name}},
                "spec": {
                    "containers": [container(ds.container, ds.image)],
                    "nodeSelector": dict(ds.node_selector),
                    "serviceAccountName": ds.name,
                    "tolerations": [{"operator": "Exists"}],
                },
            }
            # The operator's DaemonSets update OnDelete (its ClusterPolicy says so): a pod is
            # replaced only when someone deletes it, so an old image can linger on a node.
            update = "OnDelete" if ds.namespace == GPU_OPERATOR_NS else "RollingUpdate"
            spec = {
                "selector": {"matchLabels": {"app": ds.name}},
                "template": template,
                "updateStrategy": {"type": update},
            }
            status = {
                "currentNumberScheduled": n,
                "desiredNumberScheduled": n,
                "numberAvailable": n,
                "numberMisscheduled": 0,
                "numberReady": n,
                "observedGeneration": 3,
                "updatedNumberScheduled": updated,
            }
            m = meta(self.ids, "DaemonSet", ds.name, ds.namespace, labels={"app": ds.name})
            out.append(obj("apps/v1", "DaemonSet", m, spec=spec, status=status))
        return out


def _owned_by(o: Obj, kind: str, name: str) -> bool:
    refs = o["metadata"].get("ownerReferences", [])
    return any(r["kind"] == kind and r["name"] == name for r in refs)


# NVIDIA's hardening against NVIDIA_VISIBLE_DEVICES from unprivileged pods, as the operator
# copies a ClusterPolicy's toolkit.env and devicePlugin.env onto its pods (STACK-008 clean).
HARDENED_TOOLKIT_ENV: list[Obj] = [
    {"name": "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED", "value": "false"},
    {"name": "ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS", "value": "true"},
]
CDI_PLUGIN_ENV: list[Obj] = [{"name": "DEVICE_LIST_STRATEGY", "value": "cdi-cri"}]


def gpu_operator_pods(
    platform: Platform, n: NodeSpec, *, driver_managed: bool, hardened: bool = False
) -> None:
    """The per-node pods of the GPU Operator (or of the legacy standalone plugin) on a GPU node;
    `hardened`: the ClusterPolicy's toolkit and device-plugin env keep NVIDIA_VISIBLE_DEVICES
    from unprivileged pods."""
    platform.place(
        DS_TOOLKIT, n.name, n.toolkit_image, env=HARDENED_TOOLKIT_ENV if hardened else None
    )
    for ds in (DS_LEGACY_PLUGIN, DS_LEGACY_GFD) if n.legacy_plugin else (DS_PLUGIN, DS_GFD):
        env = CDI_PLUGIN_ENV if hardened and ds is DS_PLUGIN else None
        platform.place(ds, n.name, env=env)
    if n.dcgm_exporter:
        platform.place(DS_DCGM, n.name)
    platform.place(DS_VALIDATOR, n.name)
    if n.model and n.model.mig_capable:
        platform.place(DS_MIG, n.name)
    if n.sharing == "mps":
        platform.place(DS_MPS, n.name)
    if driver_managed:
        platform.place(driver_daemonset(n.driver), n.name)
