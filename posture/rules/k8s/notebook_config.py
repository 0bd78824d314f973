"""Where a notebook server reads configuration gpuposture does not (a ConfigMap or Secret
mounted at one of Jupyter's configuration paths) and which ports it listens on (K8S-006). PURE.

A Service or route reaches a server only on the server's own port; where that port cannot be
told (a variable, an env setting or a configuration file not read, a server whose port is often
set in the app's code) every port counts.
"""

from __future__ import annotations

from inventory.snapshot import Container, Pod
from posture.rules.k8s.notebook_servers import (
    CONFIG_DIRS,
    CONFIG_FILE,
    JUPYTER,
    RAY,
    env_args,
    not_running_jupyter,
    option_values,
    options,
    server_of,
    words,
)


def unread_configuration(pod: Pod, container: Container) -> list[str]:
    """Jupyter configuration files the pod mounts from a ConfigMap or Secret (which can set
    the token, the password and the address): gpuposture does not read them."""
    if server_of(container) is not JUPYTER:
        return []
    kinds = {v.name: v.kind for v in pod.volumes}
    named = _named_configuration(container)
    found = []
    for mount in container.volume_mounts:
        path = mount.mount_path.rstrip("/")
        kind = kinds.get(mount.name, "")
        if kind not in ("configMap", "secret", "projected"):
            continue
        if (
            CONFIG_FILE.search(mount.sub_path or path)
            or any(path.endswith(d) or f"{d}/" in path for d in CONFIG_DIRS)
            or any(p == path or p.startswith(f"{path}/") for p in named)
            or _config_dir_unread(container)
        ):
            found.append(f"{kind} volume {mount.name} at {mount.mount_path}")
    return found


def _named_configuration(container: Container) -> list[str]:
    """Where the container tells Jupyter to read configuration beyond its standard paths:
    JUPYTER_CONFIG_DIR (a directory) and `--config` (a file), as absolute paths."""
    found = [
        e.value.rstrip("/")
        for e in container.env
        if e.name == "JUPYTER_CONFIG_DIR" and e.value and e.value.startswith("/")
    ]
    given = options(words(container) + env_args(container)).get("--config", "")
    if given.startswith("/"):
        found.append(given.rstrip("/"))
    return found


def _config_dir_unread(container: Container) -> bool:
    """JUPYTER_CONFIG_DIR is set to a value not read (a reference, or not a plain path): any
    ConfigMap or Secret the container mounts may be that directory."""
    return any(
        e.name == "JUPYTER_CONFIG_DIR" and not (e.value and e.value.startswith("/"))
        for e in container.env
    )


# Where each server listens unless told otherwise, by the options that say the port: only
# servers whose port is a command-line matter (Streamlit's and Gradio's are often set in the
# app's code or config file: unknown). Ray's head serves jobs on its GCS and client ports as
# well as its dashboard, none authenticated without token authentication.
DEFAULT_PORTS = {
    "Jupyter": {("--port", "--ServerApp.port", "--NotebookApp.port"): 8888},
    "TensorBoard": {("--port",): 6006},
    "Ray dashboard": {
        ("--dashboard-port",): 8265,
        ("--port",): 6379,
        ("--ray-client-server-port",): 10001,
    },
    "MLflow": {("--port", "-p"): 5000},
}
# Env variables that set the port (values not read): the port is then unknown.
PORT_ENV = {"Jupyter": "JUPYTER_PORT", "MLflow": "MLFLOW_PORT"}


def listen_ports(container: Container) -> tuple[int, ...] | None:
    """The ports the server listens on, from its options or its defaults; None where that
    cannot be told (a variable, an env setting not read, a server whose default varies by
    image)."""
    server = server_of(container)
    if server is None:
        return None
    values = option_values(container)
    if server.name == "code-server":
        _, sep, port = values.get("--bind-addr", ("",))[0].rpartition(":")
        return (int(port),) if sep and port.isdigit() else None
    if any(e.name == PORT_ENV.get(server.name) for e in container.env):
        return None
    line = [w.lower() for w in words(container)]
    programs = {w.rsplit("/", 1)[-1] for w in line}
    started = (
        not_running_jupyter(container) == ""
        if server is JUPYTER
        else bool(programs & set(server.commands))
        or (server is RAY and "ray" in programs and "--head" in line)
    )
    if not started:
        return None  # its port may be set where gpuposture does not read (a script, the image)
    found = []
    for names, default in DEFAULT_PORTS.get(server.name, {}).items():
        given = [values[o][0] for o in names if o in values]
        if given and not given[-1].isdigit():
            return None
        found.append(int(given[-1]) if given else default)
    return tuple(found) or None
