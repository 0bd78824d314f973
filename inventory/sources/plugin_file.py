"""The config file of a device plugin that runs without config-manager. PURE.

Only the plugin's config-manager (an init and a sidecar container of the plugin's image, command
`config-manager`: the standalone chart with `config.map`, the GPU Operator's plugin) reads the
node's `nvidia.com/device-plugin.config` label, to copy one key of a multi-config ConfigMap to
the file the plugin reads. A plugin deployed without it (the chart given a single config file,
a hand-written DaemonSet) reads one file, named by `--config-file` or env `CONFIG_FILE`, and
never looks at the label: a stale label there changes nothing. The file is the key of the
ConfigMap volume mounted at that path.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from inventory.snapshot import TEMPLATE_PHASE, Container, Pod
from inventory.sources.images import component_of, is_gke_device_plugin

CONFIG_FILE_ENV, CONFIG_FILE_FLAG = "CONFIG_FILE", "--config-file"
MANAGER = "config-manager"


@dataclass(frozen=True)
class PluginFile:
    """What a plugin with no config-manager reads: `path` ("" when it is given no file), the
    ConfigMap key mounted there (configmap "" when the path is on no ConfigMap volume), where
    that was read, and the plugin's DaemonSet (else its pod) as (kind, name)."""

    namespace: str
    configmap: str
    key: str
    path: str
    source: str
    owner: tuple[str, str] = ("", "")


def plugin_file(pods_on_node: Iterable[Pod], templates: Sequence[Pod]) -> PluginFile | None:
    """The file the node's device plugin reads when none of its pods (else, with no pod of it
    on the node, none of the templates of its DaemonSets that run there) runs config-manager;
    None when a config-manager runs (the label decides, as it says) or no NVIDIA plugin is
    seen (a host-run plugin: what it reads is not shown)."""
    for pods in ([p for p in pods_on_node if p.is_active], list(templates)):
        plugins = [p for p in pods if any(_is_plugin(c) for c in p.containers)]
        if not plugins:
            continue
        if any(_is_manager(c) for p in plugins for c in p.containers):
            return None
        pod = plugins[0]
        container = next(c for c in pod.containers if _is_plugin(c))
        return _file_of(pod, container)
    return None


def _file_of(pod: Pod, container: Container) -> PluginFile:
    where = f"{_where(pod)} container {container.name}"
    owner = (
        ("DaemonSet", pod.name)
        if pod.phase == TEMPLATE_PHASE
        else ("DaemonSet", pod.owner_name)
        if pod.owner_kind == "DaemonSet" and pod.owner_name
        else ("Pod", pod.name)
    )
    path = _flag(container.args, CONFIG_FILE_FLAG) or _env(container, CONFIG_FILE_ENV)
    if not path:
        return PluginFile(pod.namespace, "", "", "", f"{where} is given no config file", owner)
    where = f"{where} reads {path}"
    volumes = {v.name: v for v in pod.volumes}
    # The deepest mount holding the path is the one the file is read from.
    for mount in sorted(container.volume_mounts, key=lambda m: -len(m.mount_path)):
        root = mount.mount_path.rstrip("/") or "/"
        volume = volumes.get(mount.name)
        if mount.sub_path_expr or volume is None:
            continue
        if mount.sub_path:
            if posixpath.normpath(path) != posixpath.normpath(root):
                continue
            inside = mount.sub_path
        elif path.startswith(root.rstrip("/") + "/"):
            inside = path[len(root.rstrip("/")) + 1 :]
        else:
            continue
        if volume.kind != "configMap" or not volume.config_map:
            break  # an emptyDir, a host path...: not a ConfigMap the snapshot can show
        inside = posixpath.normpath(inside)
        key = volume.config_items.get(inside, "") if volume.config_items else inside
        if "/" in key or not key:
            break  # a key is a file name; a nested path is no key of the ConfigMap
        source = f"{where}: key {key} of ConfigMap {pod.namespace}/{volume.config_map}"
        return PluginFile(pod.namespace, volume.config_map, key, path, source, owner)
    return PluginFile(pod.namespace, "", "", path, f"{where}, on no ConfigMap volume", owner)


def _is_plugin(container: Container) -> bool:
    """The plugin itself (its image also runs config-manager, GFD, the MPS daemon)."""
    if container.init or component_of(container.image) != "device_plugin":
        return False
    if is_gke_device_plugin(container.image):
        return False  # GKE's own plugin reads its node labels, never an NVIDIA config file
    words = " ".join((*container.command, *container.args, container.name))
    return not any(w in words for w in (MANAGER, "gpu-feature-discovery", "mps-control-daemon"))


def _is_manager(container: Container) -> bool:
    # Init containers too: the chart's init config-manager alone sets the first config.
    return component_of(container.image) == "device_plugin" and MANAGER in (
        *container.command,
        *container.args,
    )


def _where(pod: Pod) -> str:
    if pod.phase == TEMPLATE_PHASE:
        return f"device-plugin DaemonSet {pod.namespace}/{pod.name}"
    return f"device-plugin pod {pod.namespace}/{pod.name}"


def _env(container: Container, name: str) -> str:
    return next((v.value for v in container.env if v.name == name and v.value), "") or ""


def _flag(args: Iterable[str], flag: str) -> str:
    args = list(args)
    for index, arg in enumerate(args):
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1].strip()
        if arg == flag and index + 1 < len(args):
            return args[index + 1].strip()
    return ""
