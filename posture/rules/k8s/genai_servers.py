"""The GPU web UIs and inference APIs K8S-006 knows beside the notebooks (notebook_servers.py):
which one a container runs and how that was told, whether it asks who calls, and where it
listens. PURE.

Strangers scan for these to use a cluster's GPUs for free (ATT&CK T1496.001) or to run code:
- ComfyUI (`python main.py`): no authentication at all; listens on 127.0.0.1 unless `--listen`
  (bare: every address), port 8188 (`--port`). Custom nodes run code.
- AUTOMATIC1111 stable-diffusion-webui (`launch.py`, `webui.py`, `webui.sh`): a Gradio app on
  127.0.0.1 unless `--listen` or `--server-name`, port 7860; a login only with `--gradio-auth`
  or `--gradio-auth-path`, and then `--api` adds an API that only `--api-auth` protects.
- Open WebUI (its image, or `open-webui serve`): asks for a login unless `WEBUI_AUTH` is other
  than "true" (`os.environ.get("WEBUI_AUTH", "True").lower() == "true"`); HOST 0.0.0.0, PORT
  8080. Its functions and tools run code.
- vLLM's OpenAI server (`vllm serve`, `python -m vllm.entrypoints.openai.api_server`, the
  vllm/vllm-openai image): with no `--host` it binds every address; port 8000; a key only with
  `--api-key` or a non-empty VLLM_API_KEY.
- Ollama (`ollama serve`, the ollama/ollama image): never authenticates; OLLAMA_HOST
  (`host[:port]`, default 127.0.0.1:11434; the ollama/ollama image sets 0.0.0.0).
- Hugging Face TGI (`text-generation-launcher`, its image): `--hostname` 0.0.0.0 by default,
  `--port` 3000 (the image sets PORT=80); a key only with `--api-key` or API_KEY.
- NVIDIA NIM (an image under nvcr.io/nim/, started by its own entrypoint, as the NIM Operator
  runs it): an OpenAI-compatible (or the model's own) HTTP API on every address, port 8000
  (NIM_SERVER_PORT; NIM_HTTP_API_PORT for the NIMs that also speak gRPC), with no API
  authentication of its own: NGC_API_KEY only pulls the model.

A server is recognised by its own program or module on the command line, or by its image where
the command line runs no script of its own; a custom image needs the program's own entrypoint
(`main.py` in a ComfyUI image or path). Where the image and command line leave something
untold (a key from envFrom, a vLLM `--config` file), authentication is "unknown", never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass

from inventory.env_seal import SEALED_VALUE
from inventory.snapshot import Container, EnvVar
from posture.rules.k8s.notebook_servers import (
    ALL_ADDRESSES,
    EMPTY,
    LOOPBACK,
    OFF,
    ON,
    UNKNOWN,
    Authentication,
    env_from_may_set,
    option_values,
    runs_a_script,
    words,
)

COMFYUI, A1111, OPEN_WEBUI = "ComfyUI", "AUTOMATIC1111 stable-diffusion-webui", "Open WebUI"
VLLM, OLLAMA, TGI = "vLLM OpenAI server", "Ollama", "Hugging Face TGI"
NIM = "NVIDIA NIM"
# What a stranger gets from each (the finding's evidence says it).
GIVES = {
    COMFYUI: "runs code (custom nodes) on the pod's GPUs",
    A1111: "GPU image generation, and code through its extensions and scripts",
    OPEN_WEBUI: "runs code (functions and tools) and the models behind it",
    VLLM: "GPU compute and the served model (no code execution by design)",
    OLLAMA: "GPU compute, the models, and pulling or deleting models (no login at all)",
    TGI: "GPU compute and the served model (no code execution by design)",
    NIM: "GPU compute and the served model (no code execution by design)",
}
IMAGES = {
    OPEN_WEBUI: ("open-webui/open-webui",),
    VLLM: ("vllm/vllm-openai", "vllm-openai"),
    OLLAMA: ("ollama/ollama",),
    TGI: ("huggingface/text-generation-inference",),
    NIM: ("nvcr.io/nim/",),
}
VLLM_MODULE = "vllm.entrypoints.openai.api_server"
A1111_SCRIPTS = ("launch.py", "webui.py", "webui.sh")
A1111_MARKERS = ("stable-diffusion-webui", "sd-webui")


@dataclass(frozen=True)
class Recognised:
    server: str  # one of the names above
    how: str  # how it was recognised, as the evidence says it


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def recognise(container: Container) -> Recognised | None:
    """The GPU web UI or inference API the container runs, if gpuposture knows it."""
    line = words(container)
    lower = [w.lower() for w in line]
    image = container.image.lower()
    for i, word in enumerate(lower):
        base = _base(word)
        # The words that start the server, never its options (they may hold a password).
        shown = " ".join(
            line[max(0, i - 2) : i + 2 if lower[i + 1 : i + 2] == ["serve"] else i + 1]
        )
        if base == "main.py" and ("comfyui" in word or "comfyui" in image):
            where = "its path" if "comfyui" in word else f"the image {container.image}"
            return Recognised(COMFYUI, f"ComfyUI's main.py in {where} ({shown!r})")
        if base in A1111_SCRIPTS and any(m in word or m in image for m in A1111_MARKERS):
            return Recognised(A1111, f"the webui's {base} ({shown!r})")
        if base == "vllm" and lower[i + 1 : i + 2] == ["serve"]:
            return Recognised(VLLM, f"command `vllm serve` ({shown!r})")
        if word == VLLM_MODULE and lower[i - 1 : i] == ["-m"]:
            return Recognised(VLLM, f"module {VLLM_MODULE} ({shown!r})")
        if base == "ollama" and lower[i + 1 : i + 2] == ["serve"]:
            return Recognised(OLLAMA, f"command `ollama serve` ({shown!r})")
        if base == "text-generation-launcher":
            return Recognised(TGI, f"command text-generation-launcher ({shown!r})")
        if base == "open-webui" and lower[i + 1 : i + 2] == ["serve"]:
            return Recognised(OPEN_WEBUI, f"command `open-webui serve` ({shown!r})")
    # The image's own entrypoint starts the server unless the command line names a program
    # (arguments alone go to that entrypoint).
    if (container.command and not _starts_open_webui(lower, image)) or runs_a_script(lower):
        return None
    for server, markers in IMAGES.items():
        if any(marker in image for marker in markers):
            return Recognised(server, f"image {container.image} (its own entrypoint)")
    return None


def _starts_open_webui(line: list[str], image: str) -> bool:
    # Open WebUI's image runs `bash start.sh` (its CMD): written out, still its own server.
    return any(m in image for m in IMAGES[OPEN_WEBUI]) and "start.sh" in map(_base, line)


def _env(container: Container, name: str) -> EnvVar | None:
    return next((e for e in reversed(container.env) if e.name == name), None)


def authentication(container: Container, found: Recognised) -> Authentication:
    """Whether the server asks who is calling, read from its command line and env."""
    server = found.server
    values = option_values(container)
    if server in (COMFYUI, OLLAMA):
        return Authentication(OFF, f"no authentication ({server} has none of its own)")
    if server == NIM:
        return Authentication(
            OFF, "no API authentication (NIM has none of its own; NGC_API_KEY only pulls models)"
        )
    if server == A1111:
        return _a1111(values)
    if server == OPEN_WEBUI:
        return _open_webui(container)
    if server == VLLM:
        if "--config" in values:
            given = _key(container, values, "--api-key", "VLLM_API_KEY")
            if given.state != ON:
                return Authentication(
                    UNKNOWN, "vLLM reads --config, a file not read that may set api-key"
                )
        return _key(container, values, "--api-key", "VLLM_API_KEY")
    return _key(container, values, "--api-key", "API_KEY")


def _key(
    container: Container, values: dict[str, tuple[str, str]], option: str, variable: str
) -> Authentication:
    """An API key from the option or the env variable (an empty one is none)."""
    if values.get(option, ("",))[0] not in EMPTY:
        return Authentication(ON, f"API key set ({option})")
    var = _env(container, variable)
    if var is not None and var.value != "":
        source = " from a Secret or ConfigMap" if var.value is None else ""
        return Authentication(ON, f"API key set ({variable}{source})")
    if var is None and env_from_may_set(container, variable):
        return Authentication(
            UNKNOWN, f"{variable} may come from envFrom ({', '.join(container.env_from)}), not read"
        )
    return Authentication(OFF, f"no API key (neither {option} nor {variable} is set)")


def _a1111(values: dict[str, tuple[str, str]]) -> Authentication:
    login: list[str] = [o for o in ("--gradio-auth", "--gradio-auth-path") if o in values]
    api = "--api" in values or "--nowebui" in values
    if api and "--api-auth" not in values:
        # The API's routes are added beside Gradio's: --gradio-auth does not cover them.
        said = f"{login[0]} covers the UI only" if login else "no --gradio-auth"
        return Authentication(
            OFF, f"no authentication on its API (--api without --api-auth; {said})"
        )
    if login or "--nowebui" in values:
        return Authentication(ON, f"login required ({(login or ['--api-auth'])[0]})")
    return Authentication(OFF, "no authentication (a Gradio app without --gradio-auth)")


def _open_webui(container: Container) -> Authentication:
    var = _env(container, "WEBUI_AUTH")
    if var is None:
        if env_from_may_set(container, "WEBUI_AUTH"):
            return Authentication(
                UNKNOWN, f"WEBUI_AUTH may come from envFrom ({', '.join(container.env_from)})"
            )
        return Authentication(ON, "Open WebUI asks for a login by default (WEBUI_AUTH unset)")
    if var.value is None or var.value == SEALED_VALUE:
        return Authentication(UNKNOWN, "WEBUI_AUTH comes from a value not read")
    if var.value.lower() == "true":
        return Authentication(ON, "login required (WEBUI_AUTH=True)")
    return Authentication(OFF, f"no authentication (WEBUI_AUTH={var.value})")


def _binds(container: Container, found: Recognised) -> list[str] | None:
    """The addresses the server is told to listen on; None where it keeps its default."""
    values = option_values(container)
    server = found.server
    if server == COMFYUI and "--listen" in values:
        given = values["--listen"][0]
        return ["0.0.0.0"] if given == "true" else given.split(",")  # noqa: S104
    if server == A1111:
        if "--server-name" in values:
            return [values["--server-name"][0]]
        return ["0.0.0.0"] if "--listen" in values else None  # noqa: S104
    if server in (VLLM, OPEN_WEBUI) and "--host" in values:
        return [values["--host"][0]]
    if server == OPEN_WEBUI:
        var = _env(container, "HOST")
        return None if var is None else [var.value or ""]
    if server == TGI and "--hostname" in values:
        return [values["--hostname"][0]]
    if server == OLLAMA:
        var = _env(container, "OLLAMA_HOST")
        return None if var is None else [_ollama_host(var.value or "")[0]]
    return None


# Where each listens with no address given: only ComfyUI, the webui and Ollama outside its
# own image stay on loopback.
LOOPBACK_DEFAULT = (COMFYUI, A1111)


def listens_on_loopback_only(container: Container, found: Recognised) -> bool:
    given = _binds(container, found)
    if given is None:
        if found.server == OLLAMA:
            # The ollama/ollama image sets OLLAMA_HOST=0.0.0.0; Ollama itself 127.0.0.1.
            return not any(m in container.image.lower() for m in IMAGES[OLLAMA])
        return found.server in LOOPBACK_DEFAULT
    if any(host in ALL_ADDRESSES or host == "" for host in given):
        return False
    return all(host in LOOPBACK for host in given)


def _ollama_host(value: str) -> tuple[str, str]:
    """OLLAMA_HOST as (host, port): `[scheme://]host[:port]`, port 11434 when not given."""
    rest = value.split("://", 1)[-1].rstrip("/")
    host, sep, port = rest.rpartition(":") if not rest.endswith("]") else ("", "", "")
    if not sep or "]" in port:
        return rest, "11434"
    return host, port


DEFAULT_PORTS = {COMFYUI: 8188, A1111: 7860, OPEN_WEBUI: 8080, VLLM: 8000, OLLAMA: 11434}


def listen_ports(container: Container, found: Recognised) -> tuple[int, ...] | None:
    """The port the server listens on; None where that cannot be told (a variable, a value not
    read, TGI in an image that may set PORT)."""
    values = option_values(container)
    server = found.server
    if server == OLLAMA:
        var = _env(container, "OLLAMA_HOST")
        port = "11434" if var is None else _ollama_host(var.value or "")[1]
        return _port(port)
    given = [values[o][0] for o in ("--port", "-p") if o in values]
    if given:
        return _port(given[-1])
    if server == NIM:
        named = _env(container, "NIM_SERVER_PORT") or _env(container, "NIM_HTTP_API_PORT")
        return (8000,) if named is None else _port(named.value or "")
    var = _env(container, "PORT") if server in (OPEN_WEBUI, TGI) else None
    if var is not None:
        return _port(var.value or "")
    if server == A1111 and "--nowebui" in values:
        return (7861,)
    if server == TGI:
        # TGI's own default is 3000; its image sets PORT=80. Another image may set its own.
        return (80,) if any(m in container.image.lower() for m in IMAGES[TGI]) else None
    return (DEFAULT_PORTS[server],)


def _port(value: str) -> tuple[int, ...] | None:
    return (int(value),) if value.isdigit() else None
