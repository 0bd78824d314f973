"""Whether a tenant pod's server is reachable from outside the cluster network (K8S-006): the
Services selecting it that publish it (NodePort, LoadBalancer, externalIPs), the Ingresses and
Gateway API routes reaching those Services on the server's own port, and hostNetwork / hostPort.
posture.rules.k8s.notebooks judges the servers; this module only their reach."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inventory.snapshot import Container, Ingress, Pod, Service
from inventory.sources.istio_auth import may_be_open
from posture.inputs import PostureInputs
from posture.rules.k8s.knative_reach import forwarded_port, is_queue_proxy, relay

EXTERNAL_SERVICE_TYPES = ("NodePort", "LoadBalancer")


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
    # (Service name, how it reaches the server through a sidecar: Knative's queue-proxy)
    relays: tuple[tuple[str, str], ...] = ()

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
                    **({"via": self.via(s.name)} if self.via(s.name) else {}),
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
                    # The gateways it is bound to (outside -> gateway -> route -> Service).
                    **({"gateways": list(i.gateways)} if i.gateways else {}),
                    **({"via": self.via(s.name)} if self.via(s.name) else {}),
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
        how += [
            f"{i.kind} {i.name}"
            + (f" on {', '.join(i.gateways)}" if i.gateways else "")
            + (" via Knative's queue-proxy" if self.via(s.name) else "")
            for i, s in self.ingresses
        ]
        return list(dict.fromkeys(how + list(self.host)))

    def via(self, service: str) -> str:
        return next((hop for name, hop in self.relays if name == service), "")


def routed_ports(ingress: Ingress, service: Service) -> list[int]:
    """The ports of `service` the Ingress or route sends traffic to (as `Service.ports` numbers
    them): a Service port's number or name, or "=N" the port N it targets (an OpenShift Route's
    numeric targetPort). Every port where that cannot be told: a backend naming no port, a port
    the Service does not have, a route whose ports are not read."""
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
            if (
                port == f"={shown}"
                if port.startswith("=")
                else port == str(number)
                if port.isdigit()
                else port == name
            )
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
        proxy = next((c for c in owners if is_queue_proxy(c)), None)
        if proxy is not None and container is not proxy:
            # Knative's queue-proxy forwards its serving ports to the user container's port;
            # its admin and metrics ports reach nothing else.
            written = number if target.isdigit() else proxy.named_ports.get(target)
            number = forwarded_port(proxy, written, running)
            if number is None:
                continue
            owners = [c for c in running if number in c.ports and c is not proxy]
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
    # OIDC; an Istio gateway's policies) is the remedy, not an exposure.
    routed = tuple(
        (ingress, by_name[name])
        for ingress in sorted(inputs.snapshot.ingresses, key=lambda i: (i.namespace, i.name))
        if may_be_open(ingress.auth)
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
    running = [c for c in pod.containers if c.sidecar or not c.init]
    relays = tuple(
        (s.name, hop)
        for s in own
        if container is not None
        and (hop := relay(s.targets or tuple(map(str, s.ports)), running, container))
    )
    return Exposure(external, routed, tuple(host), relays)


def _routes_to(ingress: Ingress, service: Service, ports: list[int]) -> bool:
    return bool(set(routed_ports(ingress, service)) & set(ports))


def _backends(ingress: Ingress, namespace: str) -> tuple[str, ...]:
    """The Services of `namespace` the Ingress or route sends traffic to."""
    if ingress.namespace == namespace:
        return ingress.services
    prefix = f"{namespace}/"
    return tuple(r.removeprefix(prefix) for r in ingress.remote_services if r.startswith(prefix))
