"""Which notebook or ML dashboard a container runs, how it authenticates and where it listens,
read from its image, command line and env (K8S-006). PURE.

Each server has its own defaults: Jupyter generates a token unless told not to (an empty
`JUPYTER_TOKEN` does not switch it off: Jupyter reads an empty variable as unset); TensorBoard,
the Ray dashboard (unless Ray 2.52's `RAY_AUTH_MODE=token`), MLflow's tracking server, Streamlit
and Gradio have no authentication of their own; code-server asks for a password unless
`--auth none` (LinuxServer's image passes that when given no PASSWORD or HASHED_PASSWORD).
A server is known by its image or command line, never by a well-known port alone.
TensorBoard, Ray, MLflow, Gradio and code-server's CLI listen on loopback unless told otherwise
(code-server's image binds 0.0.0.0); Streamlit listens on every address. A server bound to
loopback only is reachable from its pod alone, whatever publishes the pod. Where it listens
says nothing of whether it authenticates: `authentication` reads that alone, "unknown" (with
the why) where the image and command line do not tell.
"""

from __future__ import annotations

import functools
import re
import shlex
from dataclasses import dataclass

from inventory.env_seal import ARGS_READ, SEALED_VALUE
from inventory.snapshot import Container

ALL_ADDRESSES = ("0.0.0.0", "*", "::", "[::]")  # noqa: S104 (what we look for, not a bind)
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
EMPTY = ("", "''", '""')
# Jupyter options whose empty value switches authentication off (token) or leaves it unset.
TOKEN_OPTIONS = ("--NotebookApp.token", "--ServerApp.token", "--IdentityProvider.token")
PASSWORD_OPTIONS = (
    "--NotebookApp.password",
    "--ServerApp.password",
    "--PasswordIdentityProvider.hashed_password",
    "--ServerApp.hashed_password",
    "--NotebookApp.hashed_password",
)


@dataclass(frozen=True)
class Server:
    name: str
    images: tuple[str, ...]  # substrings of the image reference
    commands: tuple[str, ...]  # words of the command line (program names, lower case)
    ports: tuple[int, ...]  # its well-known container ports
    bind_options: tuple[str, ...]  # options (or env variables) naming the listening address
    loopback_default: bool  # listens on loopback unless a bind option says otherwise
    has_auth: bool  # authenticates by default


JUPYTER = Server(
    "Jupyter",
    ("jupyter", "notebook", "jupyterlab", "base-notebook"),
    ("jupyter", "jupyter-lab", "jupyter-notebook", "start-notebook.sh", "start-notebook.py",
     "start-notebook", "jupyterhub-singleuser"),
    (8888,),
    ("--ip", "--NotebookApp.ip", "--ServerApp.ip"),
    False,  # the Jupyter Docker Stacks images configure 0.0.0.0
    True,
)  # fmt: skip
RAY = Server(
    "Ray dashboard",
    ("ray-dashboard", "rayproject/ray", "anyscale/ray"),
    (),
    (8265,),
    ("--dashboard-host",),
    True,
    False,
)
SERVERS = (
    JUPYTER,
    Server("TensorBoard", ("tensorboard",), ("tensorboard",), (6006,), ("--host",), True, False),
    RAY,
    Server("MLflow", ("mlflow",), ("mlflow",), (), ("--host",), True, False),
    Server("code-server", ("code-server",), ("code-server",), (), ("--bind-addr",), False, True),
    Server(
        "Streamlit",
        ("streamlit",),
        ("streamlit",),
        (8501,),
        ("--server.address", "env STREAMLIT_SERVER_ADDRESS"),
        False,
        False,
    ),
    Server("Gradio", ("gradio",), (), (7860,), ("env GRADIO_SERVER_NAME",), True, False),
)
# Kubeflow's notebook controller sets NB_PREFIX on every notebook it runs; Kubeflow's images
# (and the custom ones it documents) start the server with no token and no password, relying on
# the Istio gateway's authentication in front of the ClusterIP Service.
KUBEFLOW_ENV = "NB_PREFIX"
KUBEFLOW_REASON = "no token or password (a Kubeflow notebook"
# Where Jupyter reads configuration files (jupyter --paths) and their names.
CONFIG_DIRS = ("/etc/jupyter", "/usr/local/etc/jupyter", "/opt/conda/etc/jupyter", ".jupyter")
CONFIG_FILE = re.compile(r"jupyter_(server|notebook|lab)_config\.(py|json)$")
# Every option or env variable naming a listening address, whichever server reads it.
BIND_OPTIONS = tuple(dict.fromkeys(o for server in SERVERS for o in server.bind_options))
_VARIABLE = re.compile(r"^\$\((\w+)\)$|^\$\{?(\w+)\}?$")


def words(container: Container) -> list[str]:
    """The command line as words: a `sh -c "..."` string is split, quotes removed."""
    return list(_split((*container.command, *container.args)))


@functools.lru_cache(maxsize=4096)
def _split(parts: tuple[str, ...]) -> tuple[str, ...]:
    # Cached: thousands of pods of one workload share a command line, and shlex is slow.
    found: list[str] = []
    for part in parts:
        try:
            found += shlex.split(part) or [part]
        except ValueError:  # unbalanced quotes: keep the raw words
            found += part.split()
    return tuple(found)


def options(line: list[str]) -> dict[str, str]:
    """`--name=value` and `--name value` options by name (the last one wins, as in traitlets)."""
    found: dict[str, str] = {}
    for i, word in enumerate(line):
        if not word.startswith("-") or word == "-":
            continue
        name, sep, value = word.partition("=")
        if sep:
            found[name] = value
        elif i + 1 < len(line) and not line[i + 1].startswith("-"):
            found[name] = line[i + 1]
        else:
            found[name] = "true"  # a flag such as TensorBoard's --bind_all
    return found


# JupyterHub's own hub and proxy (images under jupyterhub/, so "jupyter" in their names): the
# hub authenticates every user itself; they serve no notebook.
HUB_PROGRAMS = frozenset({"jupyterhub", "configurable-http-proxy"})
HUB_IMAGES = ("/k8s-hub", "/configurable-http-proxy", "/k8s-image-awaiter", "/k8s-network-tools")


def server_of(container: Container) -> Server | None:
    """The notebook or dashboard the container runs, if any."""
    line = [w.lower() for w in words(container)]
    programs = {w.rsplit("/", 1)[-1] for w in line}
    image = container.image.lower()
    if programs & HUB_PROGRAMS or any(marker in image for marker in HUB_IMAGES):
        return None
    env = {e.name for e in container.env}
    for server in SERVERS:
        if server.commands and programs & set(server.commands):
            return server
    if any(w.startswith(("--notebookapp.", "--serverapp.")) for w in line):
        return JUPYTER
    if "ray" in programs and "--head" in line:
        return RAY
    if "-m" in line and _module(line) in MODULES:
        return MODULES[_module(line)]
    for server in SERVERS:
        if any(o.startswith("env ") and o[4:] in env for o in server.bind_options):
            return server
        if any(marker in image for marker in server.images) and not runs_a_script(line):
            return server
    # A well-known port alone identifies nothing: any program may listen on 8888.
    return None


# `python -m MODULE` starting a server.
MODULES = {m: JUPYTER for m in ("jupyter", "jupyterlab", "notebook", "jupyter_server")}
# Interpreters and launchers that run the script or module they are given (not a server).
INTERPRETERS = re.compile(r"^(python[\d.]*|torchrun|accelerate|deepspeed|node|java)$")
SHELLS = frozenset({"sh", "bash", "/bin/sh", "/bin/bash", "exec", "--", "env"})
SHELL_OPERATORS = frozenset({";", "&&", "||", "|"})


def _module(line: list[str]) -> str:
    i = line.index("-m")
    return line[i + 1] if i + 1 < len(line) else ""


def runs_a_script(line: list[str]) -> bool:
    """The command line plainly runs a script or module with an interpreter (`python
    train.py`, `sh -c "torchrun train.py"`): not the image's server, whatever the image.
    A shell line of several commands, or a program gpuposture does not know, is not plain."""
    rest = [w for w in line if w not in SHELLS and not (w.startswith("-") and len(w) <= 3)]
    if not rest or any(w in SHELL_OPERATORS or w.endswith(";") for w in line):
        return False
    return bool(INTERPRETERS.match(rest[0].rsplit("/", 1)[-1]))


def _resolve(value: str, container: Container) -> tuple[str, str]:
    """An option's value with a `$(VAR)` (Kubernetes) or `$VAR` (shell) reference to the
    container's env resolved as far as the spec tells: (value, note)."""
    match = _VARIABLE.match(value)
    if not match:
        return value, ""
    name = match.group(1) or match.group(2)
    var = next((e for e in reversed(container.env) if e.name == name), None)
    if var is None and env_from_may_set(container, name):
        # A Secret or ConfigMap read whole (envFrom) may set it: its keys are not read.
        return "<set>", f"${name} from envFrom ({', '.join(container.env_from)})"
    if var is None:
        # Kubernetes leaves an unknown $(VAR) as written; a shell makes an unset $VAR empty.
        return (value, "") if match.group(1) else ("", f"${name} is not set in the pod spec")
    if var.value == "":
        return "", f"{name} is empty"
    return "<set>", ""  # a literal (sealed) or a reference to a secret or ConfigMap


def env_from_may_set(container: Container, name: str) -> bool:
    """Whether an envFrom source (secretRef or configMapRef) may set the variable `name`."""
    return any(name.startswith(prefix) for _, _, prefix in container.env_from_sources())


def env_args(container: Container) -> list[str]:
    """The Docker Stacks' NOTEBOOK_ARGS (appended to the command line by its start script), as
    stored: secret values replaced by "<set>" (inventory/env_seal.py)."""
    var = next((e for e in reversed(container.env) if e.name in ARGS_READ), None)
    if var is None or not var.value or var.value == SEALED_VALUE:
        return []
    return list(_split((var.value,)))


def option_values(container: Container) -> dict[str, tuple[str, str]]:
    """Options by name, and the env variables that bind a server as "env NAME"."""
    line = words(container) + env_args(container)
    found = {k: _resolve(v, container) for k, v in options(line).items()}
    for var in container.env:
        if f"env {var.name}" in BIND_OPTIONS and var.value is not None:
            found[f"env {var.name}"] = (var.value, "")
    return found


def _host(option: str, value: str) -> str:
    if option == "--bind-addr":  # code-server: host:port
        return value.rpartition(":")[0] if value.count(":") == 1 else value
    return value


def _binds(values: dict[str, tuple[str, str]]) -> list[tuple[str, str]]:
    """(option, host) of each listening address given, in the order of BIND_OPTIONS."""
    found = [(o, _host(o, values[o][0])) for o in BIND_OPTIONS if o in values]
    if "--bind_all" in values:  # TensorBoard
        found.append(("--bind_all", "0.0.0.0"))  # noqa: S104
    return found


def listens_on_loopback_only(container: Container) -> bool:
    """Told (or by its default) to listen on loopback only: unreachable from outside its pod."""
    server = server_of(container)
    if server is None:
        return False
    given = _binds(option_values(container))
    if any(host in ALL_ADDRESSES for _, host in given):
        return False
    if given:
        return all(host in LOOPBACK for _, host in given)
    return server.loopback_default


@dataclass(frozen=True)
class Authentication:
    """Whether the server asks who is calling: "off", "on" or "unknown", and why we say so."""

    state: str
    why: str
    # Known from Jupyter's default or its env, not from a command-line option: a configuration
    # file the pod mounts (not read) can still switch the token off.
    by_default: bool = False


OFF, ON, UNKNOWN = "off", "on", "unknown"


def authentication(container: Container) -> Authentication:
    """How the server authenticates, read from its command line and env. Where that cannot be
    told (a program gpuposture does not know runs it), "unknown" with the why, never a guess."""
    server = server_of(container)
    values = option_values(container)
    if server is None:
        return Authentication(UNKNOWN, "not a notebook or dashboard gpuposture knows")
    if server is JUPYTER:
        return _jupyter(container, values)
    if server.name == "code-server":
        if LINUXSERVER_CODE_SERVER in container.image.lower():
            return _linuxserver_code_server(container)
        if values.get("--auth", ("",))[0] == "none":
            return Authentication(OFF, "no authentication (--auth none)")
        return Authentication(ON, "code-server asks for a password unless --auth none")
    if server.name == "MLflow" and values.get("--app-name", ("",))[0] == "basic-auth":
        return Authentication(ON, "MLflow's basic-auth app")
    if server is RAY:
        found = _ray_token(container)
        if found:
            return found
    if not server.has_auth:
        return Authentication(OFF, f"no authentication ({server.name} has none of its own)")
    return Authentication(ON, f"{server.name} authenticates by default")


def _jupyter(container: Container, values: dict[str, tuple[str, str]]) -> Authentication:
    off = [(o, values[o][1]) for o in TOKEN_OPTIONS if o in values and values[o][0] in EMPTY]
    password = [o for o in PASSWORD_OPTIONS if values.get(o, ("",))[0] not in EMPTY]
    if password:
        return Authentication(ON, f"password set ({password[0]})")
    if off:
        said = ", ".join(f"{o} empty" + (f": {note}" if note else "") for o, note in off)
        return Authentication(OFF, f"no token or password ({said})")
    token = [o for o in TOKEN_OPTIONS if o in values]
    if token:
        return Authentication(ON, f"token set ({token[0]})")
    if any(e.name == KUBEFLOW_ENV for e in container.env):
        return Authentication(
            OFF,
            f"{KUBEFLOW_REASON}, {KUBEFLOW_ENV} set: its image "
            "serves without one and leaves authentication to the Kubeflow gateway)",
        )
    # jupyter_server's IdentityProvider reads JUPYTER_TOKEN only when it is non-empty
    # (`if os.getenv("JUPYTER_TOKEN")` in its token default, auth/identity.py), then
    # JUPYTER_TOKEN_FILE, and otherwise generates a random token: an empty JUPYTER_TOKEN is
    # the same as none, and no value of it switches the token off. Only an empty token option
    # (or configuration file) does.
    variable = next((e for e in reversed(container.env) if e.name == "JUPYTER_TOKEN"), None)
    if variable is not None and variable.value != "":
        return Authentication(ON, "token set (JUPYTER_TOKEN)", by_default=True)
    unknown = not_running_jupyter(container)
    if unknown:
        return Authentication(UNKNOWN, unknown)
    return Authentication(
        ON, "Jupyter's default: a random token (no option switches it off)", by_default=True
    )


def not_running_jupyter(container: Container) -> str:
    """Why the container is not known to start Jupyter with Jupyter's own defaults ("" if it
    is): its command line runs a program gpuposture does not know (a script may set the token
    itself), or only its port or options say Jupyter."""
    line = [w.lower() for w in words(container)]
    if {w.rsplit("/", 1)[-1] for w in line} & set(JUPYTER.commands):
        return ""
    shown = " ".join(words(container))[:80]
    if any(marker in container.image.lower() for marker in JUPYTER.images):
        # The image's own entrypoint starts Jupyter unless the command line names a program.
        if not container.command and (not container.args or container.args[0].startswith("-")):
            return ""
        return (
            f"the image is Jupyter's but runs {shown!r}, not a Jupyter command gpuposture "
            "knows: whether it asks for a token cannot be told"
        )
    return (
        f"runs {shown!r} with Jupyter's options, not a Jupyter command gpuposture knows: "
        "whether it asks for a token cannot be told"
    )


# LinuxServer's image runs code-server with `--auth none` unless PASSWORD or HASHED_PASSWORD
# (or their FILE__ forms) is set: "if PASSWORD or HASHED_PASSWORD is not provided, there will
# be no auth" (its documentation).
LINUXSERVER_CODE_SERVER = "linuxserver/code-server"
LINUXSERVER_PASSWORDS = ("PASSWORD", "HASHED_PASSWORD", "FILE__PASSWORD", "FILE__HASHED_PASSWORD")


def _linuxserver_code_server(container: Container) -> Authentication:
    given = [e for e in container.env if e.name in LINUXSERVER_PASSWORDS and e.value != ""]
    if given:
        return Authentication(ON, f"password set ({given[-1].name})")
    if any(env_from_may_set(container, name) for name in LINUXSERVER_PASSWORDS):
        return Authentication(
            UNKNOWN,
            f"LinuxServer's code-server image: PASSWORD may come from envFrom "
            f"({', '.join(container.env_from)}), not read",
        )
    return Authentication(
        OFF,
        "no authentication (LinuxServer's code-server image without PASSWORD or HASHED_PASSWORD)",
    )


# Ray 2.52+ authenticates every RPC and HTTP entry point, the dashboard included, with a
# static token when RAY_AUTH_MODE=token (Ray's token authentication documentation); the
# default, "disabled", has none.
RAY_AUTH_MODE = "RAY_AUTH_MODE"


def _ray_token(container: Container) -> Authentication | None:
    mode = next((e for e in reversed(container.env) if e.name == RAY_AUTH_MODE), None)
    if mode is None:
        if env_from_may_set(container, RAY_AUTH_MODE):
            return Authentication(
                UNKNOWN, f"{RAY_AUTH_MODE} may come from envFrom ({', '.join(container.env_from)})"
            )
        return None
    if mode.value == "token":
        return Authentication(ON, f"Ray token authentication ({RAY_AUTH_MODE}=token)")
    if mode.value is None or mode.value == SEALED_VALUE:  # from a Secret or ConfigMap
        return Authentication(UNKNOWN, f"{RAY_AUTH_MODE} comes from a reference not read")
    return None
