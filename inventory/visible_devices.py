"""Whether a node's NVIDIA container stack honours NVIDIA_VISIBLE_DEVICES from unprivileged
pods (STACK-008, and what POD-011 says about the node). PURE.

CUDA base images set `NVIDIA_VISIBLE_DEVICES=all` in their own ENV, which no manifest shows. On
a node whose NVIDIA Container Toolkit accepts that variable from unprivileged containers, any pod
that reaches the NVIDIA runtime may see every GPU without requesting one. Two settings decide:

- the toolkit's `accept-nvidia-visible-devices-envvar-when-unprivileged` (config.toml; the
  toolkit container's env `ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED`; the GPU
  Operator's ClusterPolicy `toolkit.env`). Its default is `true` in the toolkit, and the GPU
  Operator sets nothing unless told (NVIDIA's hardening guide and bulletin 5599 set `false`);
- the device plugin's device-list strategy (flag `--device-list-strategy`, env
  `DEVICE_LIST_STRATEGY`, config `flags.plugin.deviceListStrategy`; the ClusterPolicy's
  `devicePlugin.env`). Its default is `envvar`: the plugin then hands allocated GPUs to the
  runtime through that very variable, which works only where the toolkit honours it. The GPU
  Operator sets `cdi-annotations,cdi-cri` when CDI is enabled (the default from v25.10).

The rule (documented in README): honoured when the toolkit's setting is `true` as read (a
toolkit pod on the node with the variable unset runs the default, `true`), or, the toolkit's
setting not being visible, when the device-list strategy is `envvar`; not honoured when the
setting reads `false`; otherwise unverified, and nobody is told it is honoured. A toolkit
installed on the host (cloud GPU images) keeps its setting in a file the API never shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inventory.runtime import operator_cdi_default
from inventory.snapshot import TEMPLATE_PHASE, Container, Pod, SharingConfig
from inventory.sources.images import component_of, is_gke_device_plugin
from inventory.sources.node_kinds import sandbox_absent

TOOLKIT_ENV = "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED"
STRATEGY_ENV = "DEVICE_LIST_STRATEGY"
STRATEGY_FLAG = "--device-list-strategy"
RUNTIME_DEFAULT_ENV = "NVIDIA_RUNTIME_SET_AS_DEFAULT"
PLUGIN_DEFAULT_STRATEGY = "envvar"
OPERATOR_CDI_STRATEGY = "cdi-annotations,cdi-cri"
# Containers of the device plugin's image that are not the plugin (its sidecars, GFD).
_NOT_THE_PLUGIN = ("config-manager", "gpu-feature-discovery", "mps-control-daemon")


@dataclass(frozen=True)
class Fact:
    value: str | None  # None: not visible
    source: str


@dataclass(frozen=True)
class EnvvarAccess:
    """What the node's stack shows about NVIDIA_VISIBLE_DEVICES from unprivileged pods."""

    toolkit_accepts: Fact  # "true" / "false"
    device_list_strategy: Fact
    nvidia_default_runtime: Fact  # "true" / "false": whether pods reach the NVIDIA runtime unasked

    @property
    def honoured(self) -> bool | None:
        """True, False, or None (unverified)."""
        if self.toolkit_accepts.value is not None:
            return self.toolkit_accepts.value == "true"
        strategies = (self.device_list_strategy.value or "").split(",")
        return True if PLUGIN_DEFAULT_STRATEGY in strategies else None

    @property
    def verdict(self) -> str:
        return {True: "yes", False: "no", None: "unverified"}[self.honoured]

    def evidence(self) -> dict[str, Any]:
        return {
            "honours_visible_devices_from_unprivileged_pods": self.verdict,
            "toolkit_accept_envvar_when_unprivileged": _fact(self.toolkit_accepts),
            "device_list_strategy": _fact(self.device_list_strategy),
            "nvidia_runtime_is_default": _fact(self.nvidia_default_runtime),
        }


def envvar_access(
    pods_on_node: Iterable[Pod],
    config: SharingConfig | None,
    policies: Iterable[tuple[str, Mapping[str, Any]]],
    *,
    strategy: Fact | None = None,
    toolkit_here: bool | None = None,
    operator_version: str | None = None,
    sandbox: str | None = None,
) -> EnvvarAccess:
    """The node's facts from its GPU-stack pods, its device-plugin config and the GPU
    Operator's ClusterPolicies (name, parsed spec). `strategy`: the node's device-list
    strategy as the sync resolved it (device_list_strategy), which then decides.
    `toolkit_here`: whether the Operator's toolkit runs on the node (Node.operator_toolkit);
    where it does not (a toolkit installed on the host, another stack's), the ClusterPolicy's
    `toolkit` and `cdi` settings do not configure its runtime (None: not resolved, read).
    `operator_version`: the GPU Operator's on the node (what `cdi.enabled` means for the
    default runtime depends on it). `sandbox`: the node's GPU Operator sandbox workload
    (`vm-passthrough`, `vm-vgpu`): its GPUs go to VMs and no container toolkit runs there, so
    no container gets a GPU by the variable, whatever a ClusterPolicy's toolkit settings say."""
    pods = [p for p in pods_on_node if p.is_active]
    policies = sorted(policies, key=lambda p: p[0])
    if sandbox:
        absent = sandbox_absent(sandbox)["container_toolkit"]
        return EnvvarAccess(
            toolkit_accepts=Fact("false", f"{absent}, so no container gets a GPU by the variable"),
            device_list_strategy=strategy or device_list_strategy(pods, config, policies),
            nvidia_default_runtime=Fact("false", f"{absent}: no NVIDIA runtime to be the default"),
        )
    off = [n for n, s in policies if toolkit_here is False or s.get("toolkit_enabled") is False]
    runtime = [(n, s) for n, s in policies if n not in off]
    toolkits = _containers(pods, "container_toolkit")
    return EnvvarAccess(
        toolkit_accepts=_toolkit(toolkits, runtime, off),
        device_list_strategy=strategy or device_list_strategy(pods, config, policies),
        nvidia_default_runtime=_default_runtime(toolkits, runtime, operator_version),
    )


def device_list_strategy(
    pods_on_node: Iterable[Pod],
    config: SharingConfig | None,
    policies: Iterable[tuple[str, Mapping[str, Any]]],
    *,
    config_unreadable: bool = False,
    templates: Sequence[Pod] = (),
) -> Fact:
    """The device plugin's device-list strategy on a node: the one reading every use makes
    (bulletin conditions, STACK-006, STACK-008). `config`: the device-plugin config in force on
    the node (None where none is); `config_unreadable`: the node's config could not be read;
    `templates`: the pod templates of the plugin DaemonSets that should run on the node, read
    where no plugin pod of it is in the snapshot. A plugin read to set nothing runs its
    documented default, envvar; with no plugin (pod or template) to read, or a config that
    could not be read, it is unknown (the Bottlerocket and other host-run plugins: no pod)."""
    pods = [p for p in pods_on_node if p.is_active]
    policies = sorted(policies, key=lambda p: p[0])
    plugins = [(p, c) for p, c in _containers(pods, "device_plugin") if _is_plugin(c)]
    if not plugins:
        plugins = [
            (p, c) for p, c in _containers(list(templates), "device_plugin") if _is_plugin(c)
        ]
    # GKE's own plugin takes none of NVIDIA's flags: NVIDIA's default strategy is not its.
    gke = [(p, c) for p, c in plugins if is_gke_device_plugin(c.image)]
    plugins = [(p, c) for p, c in plugins if not is_gke_device_plugin(c.image)]
    return _strategy(plugins, config, policies, gke=gke, config_unreadable=config_unreadable)


def plugin_setting(
    pods_on_node: Iterable[Pod], templates: Sequence[Pod], flag: str, env: str
) -> Fact | None:
    """What the node's NVIDIA device plugin runs with for one setting (`flag` in its args, else
    `env`): its pods on the node first, else the templates of its DaemonSets that run there.
    Fact(None, where) when the plugin is read and sets nothing (its default applies); None
    when no NVIDIA plugin is seen (a host-run plugin, GKE's own)."""
    pods = [p for p in pods_on_node if p.is_active]
    plugins = [(p, c) for p, c in _containers(pods, "device_plugin") if _is_plugin(c)]
    if not plugins:
        plugins = [
            (p, c) for p, c in _containers(list(templates), "device_plugin") if _is_plugin(c)
        ]
    plugins = [(p, c) for p, c in plugins if not is_gke_device_plugin(c.image)]
    for pod, container in plugins:
        value = _flag_value(container.args, flag) or _env(container, env)
        if value:
            return Fact(value.strip().lower(), _plugin_where(pod))
    if plugins:
        return Fact(None, f"{_plugin_where(plugins[0][0])} sets none: the plugin's default")
    return None


@dataclass(frozen=True)
class ManagerSetting:
    """A literal env value of the device plugin's config-manager, and the DaemonSet it runs in."""

    value: str
    namespace: str
    daemonset: str
    source: str


def config_manager_env(
    pods_on_node: Iterable[Pod], templates: Sequence[Pod], env: str
) -> ManagerSetting | None:
    """A literal `env` of the device plugin's config-manager (the standalone chart's and the
    GPU Operator's init and sidecar containers, command `config-manager`) on the node: its pods
    first, else the templates of its DaemonSets that run there; None when none sets it."""
    for pods in ([p for p in pods_on_node if p.is_active], list(templates)):
        managers = [  # init containers too: the init one alone sets the first config
            (pod, c)
            for pod in pods
            for c in pod.containers
            if component_of(c.image) == "device_plugin"
            and "config-manager" in (*c.command, *c.args)
        ]
        for pod, container in managers:
            value = (_env(container, env) or "").strip()
            if value:
                owner = pod.name if pod.phase == TEMPLATE_PHASE else pod.owner_name or pod.name
                where = f"{_plugin_where(pod)} container {container.name} env {env}"
                return ManagerSetting(value, pod.namespace, owner, where)
        if managers:
            return None  # the node's own plugin pod decides, not a template
    return None


def _containers(pods: list[Pod], component: str) -> list[tuple[Pod, Container]]:
    return [
        (pod, c)
        for pod in pods
        for c in pod.containers
        if not c.init and component_of(c.image) == component
    ]


def _is_plugin(container: Container) -> bool:
    words = " ".join((*container.command, *container.args, container.name))
    return not any(word in words for word in _NOT_THE_PLUGIN)


def _toolkit(toolkits: list[tuple[Pod, Container]], policies: list, off: list[str]) -> Fact:
    for pod, container in toolkits:
        where = f"container-toolkit pod {pod.namespace}/{pod.name}"
        value = _env(container, TOOLKIT_ENV)
        if value is not None:
            return _flag(value, f"{where} env {TOOLKIT_ENV}")
        if not _env_named(container, TOOLKIT_ENV):
            return Fact("true", f"{where} leaves {TOOLKIT_ENV} unset: the toolkit's default")
    for name, spec in policies:
        if spec.get("toolkit_accepts_envvar_unprivileged") is not None:
            value = "true" if spec["toolkit_accepts_envvar_unprivileged"] else "false"
            return Fact(value, f"ClusterPolicy {name} toolkit.env {TOOLKIT_ENV}")
    scoped = (
        f"; ClusterPolicy {', '.join(sorted(off))} does not configure it here: the GPU "
        "Operator's container toolkit does not run on the node"
        if off
        else ""
    )
    return Fact(
        None,
        "unverified: no container-toolkit pod on the node states it (a toolkit installed on "
        f"the host keeps it in /etc/nvidia-container-runtime/config.toml){scoped}",
    )


def _strategy(
    plugins: list[tuple[Pod, Container]],
    config: SharingConfig | None,
    policies: list,
    *,
    gke: Sequence[tuple[Pod, Container]] = (),
    config_unreadable: bool = False,
) -> Fact:
    for pod, container in plugins:
        value = _flag_value(container.args, STRATEGY_FLAG) or _env(container, STRATEGY_ENV)
        if value:
            return Fact(value, _plugin_where(pod))
    if config is not None and config.device_list_strategy:
        where = f"device-plugin config {config.namespace}/{config.configmap} key {config.key}"
        return Fact(config.device_list_strategy, where)
    for name, spec in policies:
        if spec.get("device_list_strategy"):
            source = f"ClusterPolicy {name} devicePlugin.env {STRATEGY_ENV}"
            return Fact(spec["device_list_strategy"], source)
        if spec.get("cdi_enabled"):
            return Fact(OPERATOR_CDI_STRATEGY, f"ClusterPolicy {name} cdi.enabled")
    if config_unreadable:
        return Fact(None, "unknown: the device-plugin config the node uses could not be read")
    if plugins:
        where = f"{_plugin_where(plugins[0][0])} sets none: the plugin's default"
        return Fact(PLUGIN_DEFAULT_STRATEGY, where)
    if gke:
        pod = gke[0][0]
        return Fact(
            None,
            f"unverified: GKE's own device plugin (pod {pod.namespace}/{pod.name}) runs here; "
            "it has no NVIDIA device-list strategy",
        )
    return Fact(None, "unverified: no device-plugin pod on the node, nothing states it")


def _plugin_where(pod: Pod) -> str:
    if pod.phase == TEMPLATE_PHASE:
        return f"device-plugin DaemonSet {pod.namespace}/{pod.name} (no pod of it in the snapshot)"
    return f"device-plugin pod {pod.namespace}/{pod.name}"


def _default_runtime(
    toolkits: list[tuple[Pod, Container]], policies: list, operator_version: str | None
) -> Fact:
    for pod, container in toolkits:
        value = _env(container, RUNTIME_DEFAULT_ENV)
        if value is not None:
            return _flag(value, f"container-toolkit pod {pod.namespace}/{pod.name}")
    for name, spec in policies:
        if spec.get("cdi_enabled"):
            where = f"ClusterPolicy {name} cdi.enabled"
            # From GPU Operator v25.10, containerd / CRI-O inject GPUs by CDI and the nvidia
            # runtime serves only pods that name its runtime class (which any pod may do).
            # Before, its toolkit still made the nvidia runtime the default with CDI enabled.
            cdi_native = operator_cdi_default(operator_version)
            if cdi_native is None:
                return Fact(
                    None,
                    f"unverified: {where}, but the GPU Operator's version, which decides "
                    "(the nvidia runtime stops being the default from v25.10), is unknown",
                )
            if cdi_native:
                return Fact("false", f"{where} (GPU Operator {operator_version}: v25.10+)")
            return Fact(
                "true",
                f"{where}, but GPU Operator {operator_version} (before v25.10) still makes the "
                "nvidia runtime the default",
            )
    return Fact(None, "unverified")


def _env(container: Container, name: str) -> str | None:
    """A literal env value; None when unset or from a reference."""
    return next((v.value for v in container.env if v.name == name and v.value is not None), None)


def _env_named(container: Container, name: str) -> bool:
    return any(v.name == name for v in container.env)


def _flag(value: str, source: str) -> Fact:
    word = value.strip().lower()
    return Fact(word if word in ("true", "false") else None, f"{source} = {value!r}")


def _flag_value(args: Iterable[str], flag: str) -> str | None:
    """`--flag=value` or `--flag value` in a container's args."""
    args = list(args)
    for index, arg in enumerate(args):
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1].strip() or None
        if arg == flag and index + 1 < len(args):
            return args[index + 1].strip() or None
    return None


def _fact(fact: Fact) -> dict[str, Any]:
    return {"value": fact.value, "source": fact.source}
