"""Knative's queue-proxy, in front of every serverless server (K8S-006). PURE.

Knative Serving (and KServe's serverless InferenceServices on it) adds a `queue-proxy` sidecar
to each revision pod. Every Service and route of the revision sends traffic to it (8012 for
HTTP/1, 8013 for HTTP/2, 8112 for TLS: Knative's backend ports, set in its QUEUE_SERVING_PORT
and QUEUE_SERVING_TLS_PORT), and it forwards each request to the user container on
127.0.0.1:USER_PORT (the container's declared port, 8080 by default). Its admin (8022) and
metrics (9090, 9091) ports forward nothing. So a route reaching the queue-proxy's serving port
reaches the server's own port.
"""

from __future__ import annotations

from inventory.snapshot import Container

QUEUE_PROXY = "queue-proxy"
QUEUE_IMAGE = "knative.dev/serving/cmd/queue"
# Knative's backend ports (knative.dev/networking BackendHTTPPort, BackendHTTP2Port, and the
# queue-proxy's TLS port), used where its environment does not say them.
SERVING_PORTS = (8012, 8013, 8112)
DEFAULT_USER_PORT = 8080  # Knative's default container port


def is_queue_proxy(container: Container) -> bool:
    """Knative's sidecar, by its name and its image or the variables Knative gives it."""
    env = {e.name for e in container.env}
    return container.name == QUEUE_PROXY and (
        QUEUE_IMAGE in container.image or {"SERVING_REVISION", "USER_PORT"} <= env
    )


def forwarded_port(proxy: Container, port: int | None, running: list[Container]) -> int | None:
    """The user container's port the queue-proxy forwards traffic on `port` to, None where
    `port` is not one of its serving ports."""
    serving = set(SERVING_PORTS) | {
        number
        for name in ("QUEUE_SERVING_PORT", "QUEUE_SERVING_TLS_PORT")
        if (number := _env_port(proxy, name)) is not None
    }
    if port is None or port not in serving:
        return None
    return user_port(proxy, running)


def user_port(proxy: Container, running: list[Container]) -> int:
    """USER_PORT as Knative wrote it; else the one port the other app containers declare
    (Knative lets only the serving container declare one); else Knative's default."""
    written = _env_port(proxy, "USER_PORT")
    if written is not None:
        return written
    # The mesh's sidecar declares its own metrics port (istio-proxy's 15090).
    others = [c for c in running if c is not proxy and c.name != "istio-proxy" and not c.init]
    declared = {p for c in others for p in c.ports}
    return declared.pop() if len(declared) == 1 else DEFAULT_USER_PORT


def _env_port(container: Container, name: str) -> int | None:
    value = next((e.value for e in container.env if e.name == name), None)
    return int(value) if value and value.isdigit() else None


def relay(targets: tuple[str, ...], running: list[Container], container: Container) -> str:
    """How a Service whose targets are the queue-proxy's serving ports reaches `container`
    ("" where it does not go through a queue-proxy): said in the evidence."""
    proxy = next((c for c in running if is_queue_proxy(c)), None)
    if proxy is None or container is proxy:
        return ""
    hops = set()
    for target in targets:
        port = int(target) if target.isdigit() else proxy.named_ports.get(target)
        if port is None or (target.isdigit() and port not in proxy.ports):
            continue
        forwarded = forwarded_port(proxy, port, running)
        if forwarded is not None:
            hops.add(f"{port} -> {container.name}:{forwarded}")
    return f"Knative {QUEUE_PROXY} ({', '.join(sorted(hops))})" if hops else ""
