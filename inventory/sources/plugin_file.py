"""The config file of a device plugin that runs without config-manager. PURE.

Only the plugin's config-manager (an init and a sidecar container of the plugin's image, command
`config-manager`: the standalone chart with `config.map`, the GPU Operator's plugin) reads the
node's `nvidia.com/device-plugin.config` label, to copy one key of a multi-config ConfigMap to
the file the plugin reads. A plugin deployed without it (the chart given a single config file,
a hand-written DaemonSet) reads one file, named by `--config-file` or env `CONFIG_FILE`, and
never looks at the label: a stale label there changes nothing. The file is the key of the
ConfigMap volume mounted at that path. Given no file at all (NVIDIA's static
nvidia-device-plugin.yml, the chart with no config), it runs on its flags and env alone, which
can set a MIG strategy but no time-slicing or MPS: it serves whole GPUs (or MIG devices).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from inventory.snapshot import TEMPLATE_PHASE, Container, Pod
from inventory.sources.images import component_of, is_gke_device_plugin
from inventory.sources.node_sharing import sharing_strategy

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


@dataclass(frozen=True)
class PluginReading:
    """What the node's device plugin reads for its sharing config, as far as the snapshot
    shows. `label_read`: True where a config-manager runs (it reads the node's label), False
    where the plugin is seen to run without one (it reads `file`, or no file at all: `bare`
    says where that was seen), None where that is not shown (no plugin pod or DaemonSet of it
    on the node, or a config file on a volume the snapshot does not show the content of)."""

    label_read: bool | None
    file: PluginFile | None = None
    bare: str = ""
    # Why the label's reading is not known (label_read None), for the node's sharing basis; ""
    # where the node's own labels and capacity decide its sharing anyway.
    unseen: str = ""


# The GPU Operator's plugin runs config-manager whenever its ClusterPolicy gives it configs.
MANAGED = PluginReading(True)
UNSEEN = (
    "the node's device plugin is not in the snapshot (no pod of it on the node, no DaemonSet "
    "of it that runs there)"
)


def plugin_reading(
    pods_on_node: Iterable[Pod], templates: Sequence[Pod], operator_namespace: str | None = None
) -> PluginReading:
    """How the node's device plugin picks its config: from its pods on the node, else (with no
    pod of it there) the templates of its DaemonSets that run there. A config-manager among
    them reads the label. Without one, the plugin reads its `--config-file` / CONFIG_FILE when
    that is a key of a ConfigMap volume, and nothing when it is given no file at all (but the
    GPU Operator's plugin, one in `operator_namespace`, is taken to read the label as before:
    it runs config-manager whenever its ClusterPolicy gives it configs); a file on
    an emptyDir or host path is not shown plainly (the snapshot may lack a sidecar that fills
    it), so there and with no NVIDIA plugin seen (a host-run plugin) the label semantics stand."""
    for pods in ([p for p in pods_on_node if p.is_active], list(templates)):
        plugins = [p for p in pods if any(_is_plugin(c) for c in p.containers)]
        if not plugins:
            continue
        if any(_is_manager(c) for p in plugins for c in p.containers):
            return PluginReading(True)
        pod = plugins[0]
        container = next(c for c in pod.containers if _is_plugin(c))
        if _given_no_file(container):
            if pod.namespace == operator_namespace:
                return PluginReading(True)
            where = f"{_where(pod)} container {container.name}"
            return PluginReading(False, bare=where)
        file = _file_of(pod, container)
        if file is not None:
            return PluginReading(False, file=file)
        hidden = f"{_where(pod)} reads its config file from a volume the snapshot does not show"
        return PluginReading(None, unseen=hidden)
    return PluginReading(None, unseen=UNSEEN)


def bare_checked(
    reading: PluginReading, labels: dict[str, str], capacity: dict[str, int]
) -> PluginReading:
    """A plugin seen with no config file and no config-manager shares no GPU; where the node's
    own GFD labels or capacity show its GPUs time-sliced or shared through MPS, the snapshot
    does not show all the plugin runs with (a sidecar, a pod spec cut short): what it reads is
    then not known, and the label semantics stand as where no plugin is seen."""
    if not reading.bare:
        return reading
    # `nvidia.com/gpu.shared`: the name a renaming config advertises its replicas under.
    shared = sharing_strategy(labels, capacity, None) in ("time_slicing", "mps") or any(
        k.endswith(".shared") for k in capacity
    )
    # No basis is given: the node's own labels and capacity decide its sharing there.
    return reading if not shared else PluginReading(None)


def _given_no_file(container: Container) -> bool:
    """The plugin is given no config file at all: no `--config-file` anywhere on its command
    line (a shell wrapper included), no CONFIG_FILE in its env, literal or referenced, and no
    envFrom that could set one."""
    words = " ".join((*container.command, *container.args))
    if "config-file" in words or CONFIG_FILE_ENV in words:
        return False
    return not container.env_from and not any(v.name == CONFIG_FILE_ENV for v in container.env)


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
