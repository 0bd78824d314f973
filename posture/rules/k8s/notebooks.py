"""K8S-006: tenant notebooks and dashboards reachable from outside without authentication."""

from __future__ import annotations

import functools
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from inventory.snapshot import Container, Ingress, Pod, Service
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.common import tenant_pods
from posture.rules.registry import FindingDraft, check
from posture.rules.subjects import workload_draft

NOTEBOOK_IMAGES = (
    "jupyter",
    "notebook",
    "jupyterlab",
    "tensorboard",
    "ray-dashboard",
    "mlflow",
    "base-notebook",
)
NOTEBOOK_COMMANDS = ("jupyter", "start-notebook", "--notebookapp", "--serverapp")
NOTEBOOK_PORTS = (8888, 6006, 8265)  # Jupyter, TensorBoard, Ray dashboard
# Jupyter options whose empty value switches authentication off (token) or leaves it unset.
TOKEN_OPTIONS = ("--NotebookApp.token", "--ServerApp.token", "--IdentityProvider.token")
PASSWORD_OPTIONS = (
    "--NotebookApp.password",
    "--ServerApp.password",
    "--PasswordIdentityProvider.hashed_password",
    "--ServerApp.hashed_password",
    "--NotebookApp.hashed_password",
)
# Options that choose the listening address (Jupyter, TensorBoard, Ray, MLflow).
BIND_OPTIONS = (
    "--ip",
    "--NotebookApp.ip",
    "--ServerApp.ip",
    "--host",
    "--dashboard-host",
)
ALL_ADDRESSES = ("0.0.0.0", "*", "::", "[::]")  # noqa: S104 (what we look for, not a bind)
EMPTY_VALUES = ("", "''", '""')
EXTERNAL_SERVICE_TYPES = ("NodePort", "LoadBalancer")


def _words(container: Container) -> list[str]:
    """The command line as words: a `sh -c "..."` string is split, quotes removed."""
    return list(_split((*container.command, *container.args)))


@functools.lru_cache(maxsize=4096)
def _split(parts: tuple[str, ...]) -> tuple[str, ...]:
    # Cached: thousands of pods of one workload share a command line, and shlex is slow.
    words: list[str] = []
    for part in parts:
        try:
            words += shlex.split(part) or [part]
        except ValueError:  # unbalanced quotes: keep the raw words
            words += part.split()
    return tuple(words)


def _options(words: list[str]) -> dict[str, str]:
    """`--name=value` and `--name value` options by name (the last one wins, as in traitlets)."""
    found: dict[str, str] = {}
    for i, word in enumerate(words):
        if not word.startswith("--"):
            continue
        name, sep, value = word.partition("=")
        if sep:
            found[name] = value
        elif i + 1 < len(words) and not words[i + 1].startswith("--"):
            found[name] = words[i + 1]
        else:
            found[name] = "true"  # a flag such as TensorBoard's --bind_all
    return found


def is_notebook(container: Container) -> bool:
    image = container.image.lower()
    if any(marker in image for marker in NOTEBOOK_IMAGES):
        return True
    if any(port in NOTEBOOK_PORTS for port in container.ports):
        return True
    line = " ".join(_words(container)).lower()
    return any(marker in line for marker in NOTEBOOK_COMMANDS)


def weaknesses(container: Container) -> list[str]:
    """Why the server accepts anyone who reaches it: no token or password, or all addresses."""
    options = _options(_words(container))
    reasons = []
    token_off = [o for o in TOKEN_OPTIONS if options.get(o) in EMPTY_VALUES]
    token_off += [
        f"env {e.name}" for e in container.env if e.name == "JUPYTER_TOKEN" and e.value == ""
    ]
    password_set = [o for o in PASSWORD_OPTIONS if options.get(o) not in (None, *EMPTY_VALUES)]
    if token_off and not password_set:
        reasons.append(f"no token or password ({', '.join(token_off)} empty)")
    bound = [f"{o}={options[o]}" for o in BIND_OPTIONS if options.get(o) in ALL_ADDRESSES]
    if "--bind_all" in options:
        bound.append("--bind_all")
    if bound:
        reasons.append(f"listens on all addresses ({', '.join(bound)})")
    return reasons


@dataclass(frozen=True)
class Exposure:
    services: tuple[Service, ...]  # NodePort / LoadBalancer Services selecting the pod
    # Ingresses and Gateway API routes reaching a Service of the pod
    ingresses: tuple[tuple[Ingress, Service], ...]

    def as_evidence(self) -> dict[str, Any]:
        return {
            "services": [
                {"name": s.name, "type": s.type, "ports": list(s.ports)} for s in self.services
            ],
            "ingresses": [
                {
                    "name": i.name,
                    # Ingress evidence keeps its earlier shape; a Gateway route says its kind.
                    **({} if i.kind == "Ingress" else {"kind": i.kind}),
                    "hosts": list(i.hosts),
                    "service": s.name,
                    "ports": list(s.ports),
                }
                for i, s in self.ingresses
            ],
        }


def selects(service: Service, pod: Pod) -> bool:
    # A Service without a selector has hand-made endpoints: it selects no pod by labels.
    return (
        service.namespace == pod.namespace
        and bool(service.selector)
        and all(pod.labels.get(k) == v for k, v in service.selector.items())
    )


def exposure(inputs: PostureInputs, pod: Pod) -> Exposure:
    """How the pod is reachable from outside the cluster network, if at all."""
    own = [s for s in sorted(inputs.snapshot.services, key=lambda s: s.name) if selects(s, pod)]
    external = tuple(s for s in own if s.type in EXTERNAL_SERVICE_TYPES)
    by_name = {s.name: s for s in own}
    routed = tuple(
        (ingress, by_name[name])
        for ingress in sorted(inputs.snapshot.ingresses, key=lambda i: i.name)
        if ingress.namespace == pod.namespace
        for name in ingress.services
        if name in by_name
    )
    return Exposure(external, routed)


@check(
    id="K8S-006",
    title="Notebook or ML dashboard open to anyone and reachable from outside",
    severity="critical",
    scope="tenant",
    rationale=(
        "Jupyter executes whatever code reaches it, and the Ray dashboard accepts jobs: "
        "without a token or password, or listening on every address, the first person to "
        "find the NodePort, load balancer, Ingress or Gateway API route runs code in the "
        "tenant's pod, with its GPUs, data and service-account token (ATT&CK T1190). Exposed "
        "notebooks are among the "
        "most scanned-for entry points and a common start of GPU cryptojacking."
    ),
    remediation=(
        "Give the server a token or password (remove `--ServerApp.token=`, "
        "`--IdentityProvider.token=`, `--NotebookApp.token=''` and empty JUPYTER_TOKEN; set a "
        "hashed password or let Jupyter generate a token), and stop publishing it: change the "
        "Service to ClusterIP and reach it with `kubectl port-forward`, or put it behind an "
        "Ingress with authentication (OAuth2 proxy, JupyterHub) and TLS."
    ),
    mappings=("ATT&CK:T1190", "SP800-53:AC-3"),
)
def exposed_notebook(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for pod, tenant in tenant_pods(inputs):
        # A native sidecar keeps running beside the app; other init containers have exited.
        notebooks = [c for c in pod.containers if (c.sidecar or not c.init) and is_notebook(c)]
        if not notebooks:
            continue
        reach = exposure(inputs, pod)
        if not reach.services and not reach.ingresses:
            continue
        for container in notebooks:
            reasons = weaknesses(container)
            if reasons:
                yield _notebook_draft(inputs, pod, tenant, container, reasons, reach)


def _notebook_draft(
    inputs: PostureInputs,
    pod: Pod,
    tenant: TenantInfo,
    container: Container,
    reasons: list[str],
    reach: Exposure,
) -> FindingDraft:
    evidence = {
        "container": container.name,
        "image": container.image,
        "container_ports": list(container.ports),
        "reasons": reasons,
        **reach.as_evidence(),
    }
    how = [f"{s.type} Service {s.name}" for s in reach.services]
    how += [f"{i.kind} {i.name}" for i, _ in reach.ingresses]
    title = (
        f"Notebook {container.name} in {inputs.workload_of(pod).ref()} ({'; '.join(reasons)}) "
        "is reachable "
        f"through {', '.join(dict.fromkeys(how))}"
    )
    return workload_draft("K8S-006", inputs, pod, tenant, evidence, key=container.name, title=title)
