"""K8S-006: tenant notebooks and dashboards reachable from outside without authentication."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from inventory.snapshot import Container, Ingress, Pod, Service
from inventory.sources.istio_auth import UNKNOWN as AUTH_UNKNOWN
from posture.inputs import PostureInputs
from posture.rules.common import tenant_pods
from posture.rules.k8s import genai_servers as genai
from posture.rules.k8s.notebook_config import listen_ports, unread_configuration
from posture.rules.k8s.notebook_servers import (
    KUBEFLOW_ENV,
    KUBEFLOW_REASON,
    OFF,
    UNKNOWN,
    Authentication,
    authentication,
    listens_on_loopback_only,
    server_of,
)
from posture.rules.pod.container_findings import ContainerHit, PodHits, container_drafts, listed
from posture.rules.registry import FindingDraft, check

EXTERNAL_SERVICE_TYPES = ("NodePort", "LoadBalancer")


def is_notebook(container: Container) -> bool:
    return server_of(container) is not None


@dataclass(frozen=True)
class Exposure:
    # Services selecting the pod that are reachable from outside the cluster network:
    # NodePort, LoadBalancer (internal load balancers too: they reach beyond the node), or any
    # type given externalIPs.
    services: tuple[Service, ...]
    # Ingresses and Gateway API routes reaching a Service of the pod
    ingresses: tuple[tuple[Ingress, Service], ...]
    # On the node's own address: "hostNetwork", or "hostPort N" for each port bound on the node.
    host: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.services or self.ingresses or self.host)

    def as_evidence(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "services": [
                {
                    "name": s.name,
                    "type": s.type,
                    "ports": list(s.ports),
                    **({"external_ips": list(s.external_ips)} if s.external_ips else {}),
                    # Internal: the VPC reaches it, not the internet (still beyond the node).
                    **({"internal": s.internal_lb} if _lb(s) and s.internal_lb else {}),
                    **(
                        {"source_ranges": list(s.source_ranges)}
                        if _lb(s) and s.source_ranges
                        else {}
                    ),
                }
                for s in self.services
            ],
            "ingresses": [
                {
                    "name": i.name,
                    # Ingress evidence keeps its earlier shape; a Gateway route says its kind.
                    **({} if i.kind == "Ingress" else {"kind": i.kind}),
                    **({} if i.namespace == s.namespace else {"namespace": i.namespace}),
                    "hosts": list(i.hosts),
                    "service": s.name,
                    "ports": routed_ports(i, s),
                }
                for i, s in self.ingresses
            ],
        }
        if self.host:
            found["node_address"] = list(self.host)
        return found

    def how(self) -> list[str]:
        how = [
            f"{s.type} Service {s.name}"
            + (" (externalIPs)" if s.external_ips else "")
            + (" (internal load balancer)" if _lb(s) and s.internal_lb else "")
            for s in self.services
        ]
        how += [f"{i.kind} {i.name}" for i, _ in self.ingresses]
        return list(dict.fromkeys(how + list(self.host)))


def routed_ports(ingress: Ingress, service: Service) -> list[int]:
    """The ports of `service` the Ingress or route sends traffic to (as `Service.ports` numbers
    them). Every port where that cannot be told: a backend naming no port, a port the Service
    does not have, a route whose ports are not read."""
    written = [
        port
        for entry in ingress.backend_ports
        for name, _, port in [entry.rpartition(":")]
        if name == service.name
    ]
    if not written or "*" in written or not service.port_map:
        return list(service.ports)
    found = set()
    for port in written:
        matched = {
            shown
            for name, number, shown in service.port_map
            if (port == str(number) if port.isdigit() else port == name)
        }
        if not matched:
            return list(service.ports)
        found |= matched
    return sorted(found)


def _lb(service: Service) -> bool:
    return service.type == "LoadBalancer"


def selects(service: Service, pod: Pod) -> bool:
    # A Service without a selector has hand-made endpoints: it selects no pod by labels.
    return (
        service.namespace == pod.namespace
        and bool(service.selector)
        and all(pod.labels.get(k) == v for k, v in service.selector.items())
    )


def reaches(
    service: Service, pod: Pod, container: Container, ports: tuple[int, ...] | None = None
) -> bool:
    """Whether some port of the Service sends traffic to `container` (to its server's own
    `ports`, when known)."""
    return bool(reached_ports(service, pod, container, ports))


def reached_ports(
    service: Service, pod: Pod, container: Container, ports: tuple[int, ...] | None = None
) -> list[int]:
    """The ports of the Service (as `Service.ports` numbers them) that send traffic to
    `container`, to its server's `ports` when they are known: a Service for the pod's metrics
    port does not reach its notebook. A targetPort another container of the pod declares is
    that container's (a pod shares one network namespace: two processes cannot listen on one
    port), e.g. an OAuth proxy in front of the notebook; a name resolves against the pod's
    port names. A number nobody declares may be the
    notebook's (declaring ports is optional); a name no container declares gives no endpoint,
    unless the pod names no port at all (read before port names were kept: unknown)."""
    targets = service.targets or tuple(str(p) for p in service.ports)
    # Each target beside the port `ports` shows for it (every port where they do not pair).
    shown = service.ports if len(service.ports) == len(targets) else None
    running = [c for c in pod.containers if c.sidecar or not c.init]
    names_known = any(c.named_ports for c in running)
    found: list[int] = []
    for i, target in enumerate(targets):
        if target.isdigit():
            owners = [c for c in running if int(target) in c.ports]
            number: int | None = int(target)
        else:
            owners = [c for c in running if target in c.named_ports]
            if not owners and names_known:
                continue
            number = container.named_ports.get(target)
        if owners and container not in owners:
            continue
        if ports is not None and number is not None and number not in ports:
            continue  # another port of the container: not the server's
        if shown is None:
            return list(service.ports)
        found.append(shown[i])
    return found


def exposure(
    inputs: PostureInputs,
    pod: Pod,
    container: Container | None = None,
    ports: tuple[int, ...] | None = None,
) -> Exposure:
    """How the pod (its `container`, when given, on its server's `ports` when known) is
    reachable from outside the cluster network, if at all."""
    reached = {
        s.name: (list(s.ports) if container is None else reached_ports(s, pod, container, ports))
        for s in inputs.snapshot.services
        if selects(s, pod)
    }
    own = [
        s
        for s in sorted(inputs.snapshot.services, key=lambda s: s.name)
        if selects(s, pod) and (container is None or reached[s.name])
    ]
    external = tuple(s for s in own if s.type in EXTERNAL_SERVICE_TYPES or s.external_ips)
    by_name = {s.name: s for s in own}
    # An Ingress whose controller authenticates every request (OAuth2 proxy, basic auth,
    # OIDC) is the remedy, not an exposure.
    routed = tuple(
        (ingress, by_name[name])
        for ingress in sorted(inputs.snapshot.ingresses, key=lambda i: (i.namespace, i.name))
        if not ingress.auth or ingress.auth.startswith(AUTH_UNKNOWN)
        for name in _backends(ingress, pod.namespace)
        if name in by_name
        # The route must send traffic to a port that reaches the server (a Service with no
        # ports read reaches it on every port).
        and (not by_name[name].ports or _routes_to(ingress, by_name[name], reached[name]))
    )
    host: list[str] = []
    if pod.host_network:
        host.append("hostNetwork")
    for c in pod.containers if container is None else (container,):
        host += [f"hostPort {port}" for port in c.host_ports]
    return Exposure(external, routed, tuple(host))


def _routes_to(ingress: Ingress, service: Service, ports: list[int]) -> bool:
    return bool(set(routed_ports(ingress, service)) & set(ports))


def _backends(ingress: Ingress, namespace: str) -> tuple[str, ...]:
    """The Services of `namespace` the Ingress or route sends traffic to."""
    if ingress.namespace == namespace:
        return ingress.services
    prefix = f"{namespace}/"
    return tuple(r.removeprefix(prefix) for r in ingress.remote_services if r.startswith(prefix))


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
        "route or a mesh's or ingress controller's own route (Istio, Contour, Emissary, NGINX, "
        "Kong, Traefik, OpenShift) runs code in the "
        "tenant's pod, with its GPUs, data and service-account token (ATT&CK T1190). Exposed "
        "notebooks are among the "
        "most scanned-for entry points and a common start of GPU cryptojacking. So are GPU web "
        "UIs and inference APIs, used by strangers for free GPU compute (ATT&CK T1496.001) or "
        "code: ComfyUI (no login at all; custom nodes run code), AUTOMATIC1111's "
        "stable-diffusion-webui without `--gradio-auth` (or with `--api` and no `--api-auth`), "
        "Open WebUI with `WEBUI_AUTH` off (functions and tools run code), and vLLM, Ollama (no "
        "login at all) and Hugging Face TGI without an API key; the evidence names the server, "
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
        "`--api-key` or API_KEY from a Secret; ComfyUI and Ollama have no login: bind them to "
        "loopback (no `--listen`; `OLLAMA_HOST=127.0.0.1`) behind an authenticating proxy), "
        "and stop publishing it: change the "
        "Service to ClusterIP (without externalIPs; no hostNetwork or hostPort on the pod) and "
        "reach it with `kubectl port-forward`, or put it behind an "
        "Ingress with authentication (OAuth2 proxy, JupyterHub) and TLS."
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
        reach = exposure(inputs, pod, container, ports)
        if reach and _kubeflow(inputs, pod, container, auth):
            # Kubeflow publishes each notebook with an Istio VirtualService on its own
            # gateway, which is where Kubeflow authenticates: that route is the design.
            routed = tuple((i, s) for i, s in reach.ingresses if i.kind != "VirtualService")
            reach = replace(reach, ingresses=routed)
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


def _kubeflow(inputs: PostureInputs, pod: Pod, container: Container, auth: Authentication) -> bool:
    """A Kubeflow notebook: its stock image (KUBEFLOW_REASON), or any server the notebook
    controller runs (NB_PREFIX set, or a Notebook owns its workload), such as a custom image
    started with Kubeflow's documented `--ServerApp.token='' --ServerApp.password=''`."""
    return (
        auth.why.startswith(KUBEFLOW_REASON)
        or any(e.name == KUBEFLOW_ENV for e in container.env)
        or inputs.workload_of(pod).kind == "Notebook"
    )


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
    unsure = [f"{i.kind} {i.name}: {i.auth}" for i, _ in reach.ingresses if i.auth]
    if unsure:
        # Policies in front of the route that were not evaluated (Istio's, NGINX Inc's) may
        # authenticate.
        evidence["route_authentication"] = list(dict.fromkeys(unsure))
        if len(unsure) == len(reach.ingresses) and not (reach.services or reach.host):
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
    if all(entry.get("route_authentication") and entry.get("verdict") for entry in entries):
        title += " (whether the route authenticates is unknown)"
    return title
