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
    """The key of a ConfigMap a plugin with no config-manager reads as its config file, the
    path it reads it at, and where that was read."""

    namespace: str
    configmap: str
    key: str
    path: str
    source: str


def plugin_file(pods_on_node: Iterable[Pod], templates: Sequence[Pod]) -> PluginFile | None:
    """The ConfigMap key the node's device plugin reads as its one config file when none of its
    pods (else, with no pod of it on the node, none of the templates of its DaemonSets that
    run there) runs config-manager and its `--config-file` / CONFIG_FILE is on a ConfigMap
    volume. None otherwise, and the label semantics stand: a config-manager runs, no NVIDIA
    plugin is seen (a host-run plugin), or what the plugin reads is not shown plainly (no file
    given, a file on an emptyDir or host path: the snapshot may lack a sidecar that fills it)."""
    for pods in ([p for p in pods_on_node if p.is_active], list(templates)):
        plugins = [p for p in pods if any(_is_plugin(c) for c in p.containers)]
        if not plugins:
            continue
        if any(_is_manager(c) for p in plugins for c in p.containers):
            return None
        pod = plugins[0]
        return _file_of(pod, next(c for c in pod.containers if _is_plugin(c)))
    return None


def _file_of(pod: Pod, container: Container) -> PluginFile | None:
    path = _flag(container.args, CONFIG_FILE_FLAG) or _env(container, CONFIG_FILE_ENV)
    if not path.startswith("/"):
        return None  # none given, or sealed (not a path)
    volumes = {v.name: v for v in pod.volumes}
    # The deepest mount holding the path is the one the file is read from.
    for mount in sorted(container.volume_mounts, key=lambda m: -len(m.mount_path)):
        root = mount.mount_path.rstrip("/")
        if mount.sub_path_expr:
            continue  # its path is known only when the container starts
        if mount.sub_path:
            if posixpath.normpath(path) != posixpath.normpath(root or "/"):
                continue
            inside = mount.sub_path
        elif path.startswith(root + "/"):
            inside = path[len(root) + 1 :]
        else:
            continue
        volume = volumes.get(mount.name)
        if volume is None or volume.kind != "configMap" or not volume.config_map:
            return None  # an emptyDir, a host path...: not a ConfigMap the snapshot shows
        inside = posixpath.normpath(inside)
        key = volume.config_items.get(inside, "") if volume.config_items else inside
        if not key or "/" in key:
            return None  # a key is a file name: a nested path is no key
        where = f"{_where(pod)} container {container.name} reads {path}"
        source = f"{where}: key {key} of ConfigMap {pod.namespace}/{volume.config_map}"
        return PluginFile(pod.namespace, volume.config_map, key, path, source)
    return None


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
