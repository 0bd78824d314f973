"""K8S-006 on GPU web UIs and inference APIs (ComfyUI, AUTOMATIC1111's webui, Open WebUI, vLLM,
Ollama, Hugging Face TGI): loud when one asks for no credentials and is reachable from outside
on its own port; quiet with a login or key, on loopback, behind ClusterIP only, or published on
another port."""

from __future__ import annotations

import pytest

import posture.rules.k8s.notebooks  # noqa: F401
from inventory.env_seal import SEALED_VALUE, literal_env
from inventory.snapshot import Container, Service
from posture.rules import CHECKS
from tests.posture.builders import container_entry, env, inputs, pod, run, tenant

ALPHA = tenant("alpha", namespaces=("alpha",))
APP = {"app": "gen"}
COMFY = "ghcr.io/ai-dock/comfyui:v2-cuda-12.1.1-base-22.04"
WEBUI = "ghcr.io/ai-dock/stable-diffusion-webui:v2-cuda-12.1.1-base-22.04"
OWUI = "ghcr.io/open-webui/open-webui:cuda"
VLLM = "vllm/vllm-openai:v0.9.1"
OLLAMA = "ollama/ollama:0.9.0"
TGI = "ghcr.io/huggingface/text-generation-inference:3.3.2"
NIM = "nvcr.io/nim/meta/llama-3.1-8b-instruct:1.8.4"
ALL = "0.0.0.0"  # noqa: S104 (every address, as a pod spec writes it)


def ctr(image, command=(), args=(), envs=(), **fields) -> Container:
    return Container(
        "srv", image, command=tuple(command), args=tuple(args), env=tuple(envs), **fields
    )


def world(c: Container, port: int, kind: str = "LoadBalancer", **service):
    svc = Service("alpha", "srv", kind, APP, (port,), **service)
    p = pod("alpha", "srv-0", containers=(c,), labels=APP)
    return inputs(pods=(p,), tenants=(ALPHA,), services=(svc,))


LOUD = [
    # (container, port, server, words the reason and recognition carry)
    (
        ctr(COMFY, ["python", "main.py"], ["--listen", ALL, "--port", "8188"]),
        8188,
        "ComfyUI",
        "main.py in the image",
    ),
    # A custom image: ComfyUI's path says it; a bare --listen is every address.
    (
        ctr("python:3.11", ["sh", "-c", "python /opt/ComfyUI/main.py --listen"]),
        8188,
        "ComfyUI",
        "its path",
    ),
    (
        ctr(WEBUI, ["python", "launch.py"], ["--listen", "--port", "7860"]),
        7860,
        "AUTOMATIC1111",
        "launch.py",
    ),
    # --gradio-auth covers the UI; the API --api adds is protected only by --api-auth.
    (
        ctr(WEBUI, ["python", "launch.py"], ["--listen", "--api", "--gradio-auth", "u:p"]),
        7860,
        "AUTOMATIC1111",
        "--api without --api-auth",
    ),
    (ctr(OWUI, envs=[literal_env("WEBUI_AUTH", "False")]), 8080, "Open WebUI", "WEBUI_AUTH=False"),
    (ctr(VLLM, args=["--model", "m", "--host", ALL]), 8000, "vLLM", "no API key"),
    # vLLM binds every address when given no --host.
    (ctr("registry.example.com/llm:1", ["vllm", "serve"], ["m"]), 8000, "vLLM", "vllm serve"),
    (
        ctr("python:3.11", ["python3", "-m", "vllm.entrypoints.openai.api_server"]),
        8000,
        "vLLM",
        "module vllm.entrypoints",
    ),
    # Ollama's image sets OLLAMA_HOST=0.0.0.0 itself.
    (ctr(OLLAMA), 11434, "Ollama", "none of its own"),
    (
        ctr(
            "registry.example.com/ollama:1",
            ["ollama", "serve"],
            envs=[env("OLLAMA_HOST", "0.0.0.0:11500")],
        ),
        11500,
        "Ollama",
        "ollama serve",
    ),
    (ctr(TGI, args=["--model-id", "m", "--hostname", ALL]), 80, "TGI", "no API key"),
    # NIM serves on every address with no API key of its own (rtself12 k44); NGC_API_KEY pulls.
    (
        ctr(NIM, envs=[env("NGC_API_KEY", None, "secretKeyRef:ngc/key")]),
        8000,
        "NIM",
        "NGC_API_KEY only pulls models",
    ),
    (
        ctr(NIM, envs=[literal_env("NIM_SERVER_PORT", "9000")]),
        9000,
        "NIM",
        "image nvcr.io/nim/",
    ),
]


@pytest.mark.parametrize(("c", "port", "server", "said"), LOUD)
def test_exposed_gpu_server_is_one_critical_finding(c, port, server, said):
    (draft,) = run("K8S-006", world(c, port))
    entry = container_entry(draft)
    # The check's severity (an empty draft severity): K8S-006 grades no finding lower.
    assert (draft.severity or CHECKS["K8S-006"].severity) == "critical"
    assert draft.tenants == ("alpha",)
    assert server in entry["server"] and entry["authentication"] == "off"
    assert said in entry["reasons"][0] + entry["recognised_by"]
    assert entry["gives"] and entry["reachable_through"] == ["LoadBalancer Service srv"]
    assert draft.title.startswith(entry["server"])


def test_key_from_env_from_is_unknown_not_silence():
    c = ctr(VLLM, args=["--host", ALL], env_from=("secretRef:vllm-env",))
    (draft,) = run("K8S-006", world(c, 8000, "NodePort"))
    entry = container_entry(draft)
    assert entry["authentication"] == "unknown" and "envFrom" in entry["reasons"][0]


def test_evidence_never_shows_the_options():
    c = ctr(WEBUI, ["python", "launch.py"], ["--listen", "--api", "--gradio-auth", "u:hunter2"])
    (draft,) = run("K8S-006", world(c, 7860))
    assert "hunter2" not in container_entry(draft)["recognised_by"]


QUIET = [
    # A login or a key.
    ctr(WEBUI, ["python", "launch.py"], ["--listen", "--gradio-auth", "sd:Qw8Zr1Lx"]),
    ctr(
        WEBUI,
        ["python", "launch.py"],
        ["--listen", "--api", "--gradio-auth-path", "/a", "--api-auth", "u:p"],
    ),
    ctr(OWUI),  # Open WebUI asks for a login by default
    ctr(OWUI, envs=[literal_env("WEBUI_AUTH", "True")]),
    ctr(
        VLLM,
        ["vllm", "serve"],
        ["m", "--host", ALL],
        [env("VLLM_API_KEY", None, "secretKeyRef:v/k")],
    ),
    ctr(VLLM, args=["m", "--api-key", "<set>"]),
    ctr(TGI, envs=[env("API_KEY", None, "secretKeyRef:tgi/k")]),
    # On loopback: ComfyUI and the webui without --listen, Ollama outside its own image.
    ctr(COMFY, ["python", "main.py"], ["--port", "8188"]),
    ctr(WEBUI, ["python", "launch.py"]),
    ctr("registry.example.com/ollama:1", ["ollama", "serve"]),
    ctr(OLLAMA, envs=[env("OLLAMA_HOST", "127.0.0.1:11434")]),
    # Not the server: a script in the server's image, a main.py nothing ties to ComfyUI.
    ctr(VLLM, ["python", "train.py"]),
    ctr("python:3.11", ["python", "main.py", "--listen"]),
    # A NIM image running a script of its own is not the NIM server.
    ctr(NIM, ["python", "bench.py"]),
]


@pytest.mark.parametrize("c", QUIET)
def test_quiet_with_auth_loopback_or_another_program(c):
    assert run("K8S-006", world(c, 8188 if "comfy" in c.image else 8000)) == []
    for port in (7860, 8080, 80, 11434):
        assert run("K8S-006", world(c, port)) == []


@pytest.mark.parametrize(("c", "port", "server", "said"), LOUD[:1] + LOUD[4:6] + LOUD[8:9])
def test_quiet_when_not_reachable_or_on_another_port(c, port, server, said):
    assert run("K8S-006", world(c, port, "ClusterIP")) == []
    # The Service publishes a metrics port, not the server's.
    assert run("K8S-006", world(c, 9100)) == []


def test_open_webui_switch_and_ollama_address_survive_the_sync():
    # Values the sync would otherwise seal: the check reads them (an address, a word).
    assert literal_env("WEBUI_AUTH", "False").value == "False"
    assert literal_env("OLLAMA_HOST", "0.0.0.0:11434").value == "0.0.0.0:11434"
    assert literal_env("PORT", "8080").value == "8080"
    assert literal_env("VLLM_API_KEY", "sk-abcdef0123456789").value == SEALED_VALUE
    assert literal_env("NIM_SERVER_PORT", "9000").value == "9000"


def test_a_nim_is_judged_on_the_port_it_serves():
    # NIM_SERVER_PORT moves the API: a Service publishing the default 8000 reaches nothing.
    moved = ctr(NIM, envs=[literal_env("NIM_SERVER_PORT", "9000")])
    assert run("K8S-006", world(moved, 8000)) == []
    assert len(run("K8S-006", world(moved, 9000))) == 1
