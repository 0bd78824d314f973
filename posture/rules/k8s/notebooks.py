"""K8S-006: tenant notebooks and dashboards reachable from outside without authentication."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from inventory.snapshot import Container, Pod
from inventory.sources.istio_auth import UNKNOWN as ROUTE_UNKNOWN
from posture.inputs import PostureInputs
from posture.rules.common import tenant_pods
from posture.rules.k8s import genai_servers as genai
from posture.rules.k8s.notebook_config import listen_ports, unread_configuration
from posture.rules.k8s.notebook_servers import (
    OFF,
    UNKNOWN,
    Authentication,
    authentication,
    listens_on_loopback_only,
    server_of,
)
from posture.rules.k8s.service_reach import Exposure, exposure
from posture.rules.pod.container_findings import ContainerHit, PodHits, container_drafts, listed
from posture.rules.registry import FindingDraft, check


def is_notebook(container: Container) -> bool:
    return server_of(container) is not None


@check(
    id="K8S-006",
    needs=("Service",),
    title="Notebook, ML dashboard or GPU model server open to anyone and reachable from outside",
    severity="critical",
    scope="tenant",
    rationale=(
        "Jupyter executes whatever code reaches it, and the Ray dashboard accepts jobs: "
        "without a token or password (or a server with no login of its own), the first "
        "person to find the NodePort, load balancer, external IP, host port, Ingress, Gateway API "
        "route or a mesh's or ingress controller's own route (Istio, Knative, Contour, "
        "Emissary, NGINX, Kong, Traefik, OpenShift) runs code in the "
        "tenant's pod, with its GPUs, data and service-account token (ATT&CK T1190). Exposed "
        "notebooks are among the "
        "most scanned-for entry points and a common start of GPU cryptojacking. So are GPU web "
        "UIs and inference APIs, used by strangers for free GPU compute (ATT&CK T1496.001) or "
        "code: ComfyUI (no login at all; custom nodes run code), AUTOMATIC1111's "
        "stable-diffusion-webui without `--gradio-auth` (or with `--api` and no `--api-auth`), "
        "Open WebUI with `WEBUI_AUTH` off (functions and tools run code), vLLM, Ollama (no "
        "login at all) and Hugging Face TGI without an API key, and NVIDIA NIM containers "
        "(images under nvcr.io/nim/: no API authentication of their own); the evidence names "
        "the server, "
        "how it was recognised (its program or entrypoint, or its image), what it gives and "
        "how it is reached. Listening on "
        "every address is no finding by itself (any pod a Service reaches does); a server "
        "whose authentication cannot be read from its image and command line is reported "
        'with its authentication "unknown" and why.'
    ),
    remediation=(
        "Give the server a token or password (remove `--ServerApp.token=`, "
        "`--IdentityProvider.token=`, `--NotebookApp.token=''`, code-server's `--auth none`; set a "
        "hashed password or let Jupyter generate a token; set PASSWORD or HASHED_PASSWORD on "
        "LinuxServer's code-server image; turn on Ray's token authentication with "
        "`RAY_AUTH_MODE=token` (Ray 2.52+); TensorBoard, MLflow, Streamlit and Gradio have no "
        "login of their own: bind them to 127.0.0.1 behind an authenticating proxy; start "
        "stable-diffusion-webui with `--gradio-auth` (and `--api-auth` with `--api`), keep "
        "Open WebUI's `WEBUI_AUTH` on, give vLLM `--api-key` or VLLM_API_KEY and TGI "
        "`--api-key` or API_KEY from a Secret; ComfyUI, Ollama and NIM have no login: bind "
        "ComfyUI and Ollama to loopback (no `--listen`; `OLLAMA_HOST=127.0.0.1`) and put any "
        "of them behind an authenticating proxy or API gateway), "
        "and stop publishing it: change the "
        "Service to ClusterIP (without externalIPs; no hostNetwork or hostPort on the pod) and "
        "reach it with `kubectl port-forward`, or put it behind an "
        "Ingress with authentication (OAuth2 proxy, JupyterHub) and TLS. A Kubeflow notebook "
        "or KServe model behind Istio's gateway: restore the gateway's authentication "
        "(Kubeflow's oauth2-proxy CUSTOM and require-jwt DENY AuthorizationPolicies on the "
        "ingress gateway's pods)."
    ),
    mappings=("ATT&CK:T1190", "SP800-53:AC-3"),
)
def exposed_notebook(inputs: PostureInputs) -> Iterator[FindingDraft]:
    # One finding per workload (DESIGN §5), listing each exposed server's container in
    # `containers`: a pod running Jupyter beside TensorBoard is one cause on one workload.
    found = (
        PodHits(pod, tenant, _exposed_servers(inputs, pod)) for pod, tenant in tenant_pods(inputs)
    )
    yield from container_drafts("K8S-006", inputs, found, title=_notebooks_title)


def _exposed_servers(inputs: PostureInputs, pod: Pod) -> list[ContainerHit]:
    """The pod's notebook and dashboard servers that ask for no credentials (or whose asking
    cannot be told) and are reachable from outside."""
    hits = []
    # A native sidecar keeps running beside the app; other init containers have exited.
    for container in [c for c in pod.containers if c.sidecar or not c.init]:
        found = genai.recognise(container)
        if found is not None:
            hits += _exposed_genai(inputs, pod, container, found)
            continue
        if not is_notebook(container):
            continue
        # Bound to loopback only (behind an authenticating proxy in the pod, say): nothing
        # outside the pod reaches it, whatever publishes the pod.
        if listens_on_loopback_only(container):
            continue
        auth = authentication(container)
        unread = unread_configuration(pod, container)
        if unread and auth.by_default:
            # A configuration file may switch the token off: unknown, never a silent pass.
            auth = Authentication(UNKNOWN, f"authentication unknown ({'; '.join(unread)} not read)")
        # Any pod a Service reaches listens on all addresses: that alone opens nothing. The
        # finding is a server that asks for no credentials, or one whose asking cannot be
        # told (said so in the evidence).
        if auth.state not in (OFF, UNKNOWN):
            continue
        # The server's own ports (unknown where a configuration file not read may move it).
        ports = None if unread else listen_ports(container)
        # A Kubeflow notebook serves without a token by design: Kubeflow's gateway is where
        # requests are authenticated. Its VirtualService is judged like any other, by what
        # Istio's policies on that gateway do (inventory/sources/istio_auth.py): no finding
        # where they authenticate, a finding where nothing does or that is unknown.
        reach = exposure(inputs, pod, container, ports)
        if reach:
            hits.append(ContainerHit(container, _server_evidence(container, auth, reach, unread)))
    return hits


def _exposed_genai(
    inputs: PostureInputs, pod: Pod, container: Container, found: genai.Recognised
) -> list[ContainerHit]:
    """A GPU web UI or inference API (genai_servers.py) that asks for no credentials, or whose
    asking cannot be told, reachable from outside on its own port."""
    if genai.listens_on_loopback_only(container, found):
        return []
    auth = genai.authentication(container, found)
    if auth.state not in (OFF, UNKNOWN):
        return []
    reach = exposure(inputs, pod, container, genai.listen_ports(container, found))
    if not reach:
        return []
    evidence = {
        "server": found.server,
        "recognised_by": found.how,
        "gives": genai.GIVES[found.server],
        **_server_evidence(container, auth, reach, []),
    }
    return [ContainerHit(container, evidence)]


def _server_evidence(
    container: Container, auth: Authentication, reach: Exposure, unread: list[str]
) -> dict[str, Any]:
    """The server's entry in `containers`: its ports, why it asks for no credentials, and
    how it is reached (`reachable_through`, as the title says it)."""
    reason = auth.why
    if auth.state == UNKNOWN and not reason.startswith("authentication unknown"):
        reason = f"authentication unknown: {reason}"
    evidence = {
        "container": container.name,
        "init_container": container.init,
        "image": container.image,
        "container_ports": list(container.ports),
        "authentication": auth.state,
        "reasons": [reason],
        **reach.as_evidence(),
        "reachable_through": reach.how(),
    }
    if unread:
        evidence["unread_configuration"] = unread
    if auth.state == UNKNOWN:
        evidence["verdict"] = "unknown"
    # What is in front of each route: nothing that authenticates ("none: " and why), or
    # policies not evaluated (Istio's, NGINX Inc's), which may authenticate.
    said = [f"{i.kind} {i.name}: {i.auth}" for i, _ in reach.ingresses if i.auth]
    if said:
        evidence["route_authentication"] = list(dict.fromkeys(said))
    unsure = [i for i, _ in reach.ingresses if i.auth.startswith(ROUTE_UNKNOWN)]
    if unsure and len(unsure) == len(reach.ingresses) and not (reach.services or reach.host):
        evidence["verdict"] = "unknown"
    return evidence


def _notebooks_title(ref: str, entries: list[dict[str, Any]], _: list[ContainerHit]) -> str:
    """The server, why it asks for nothing and how it is reached; or, for several, their
    count, names and every way in."""
    how = listed(way for entry in entries for way in entry["reachable_through"])
    if len(entries) == 1:
        entry = entries[0]
        # A GPU web UI or inference API says which server it is.
        what = entry.get("server", "Notebook")
        title = (
            f"{what} {entry['container']} in {ref} ({entry['reasons'][0]}) "
            f"is reachable through {how}"
        )
    else:
        names = listed(str(entry["container"]) for entry in entries)
        kind = "servers" if any("server" in entry for entry in entries) else "notebooks"
        title = f"{len(entries)} {kind} in {ref} ({names}) are reachable through {how}"
    if all(
        any(ROUTE_UNKNOWN in said for said in entry.get("route_authentication", ()))
        and entry.get("verdict")
        for entry in entries
    ):
        title += " (whether the route authenticates is unknown)"
    return title
