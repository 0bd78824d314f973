"""Internet egress limited to named ports, read alike for the three engines K8S-007 evaluates.
PURE.

The project's decision: a deliberate egress rule letting pods reach the internet only on some
ports (443/TCP, say) is a control, as an allow-list of hosts is: the pods are "restricted", and
the ports are said ("internet reachable on ports 443/TCP"). A rule reaching the internet on every
port (no ports; a port with no number; a range from 1 to 65535; Cilium's port "0") keeps them
"open". Each reader returns the ports as labels ("443/TCP", "8000-8080/TCP"), () for none
(the rule is not limited to ports), or None for every port.

- Kubernetes NetworkPolicy: a rule's `ports` (`port`, `endPort`, `protocol`, TCP by default).
- Cilium: an egress entry's `toPorts[].ports` (`port`, `endPort`, `protocol`, ANY by default).
- Calico: a rule's `protocol` and `destination.ports` (numbers, "from:to" ranges, names).
"""

from __future__ import annotations

from typing import Any

from inventory.sources.raw import as_int, dicts, mapping, text

EVERY_PORT = None
Ports = tuple[str, ...] | None


def note(ports: tuple[str, ...]) -> str:
    """What the evidence says of internet egress limited to ports."""
    return f"internet reachable on ports {', '.join(ports)}"


def kubernetes_ports(rule: dict[str, Any]) -> Ports:
    """A NetworkPolicy egress rule's ports; None when it matches every port."""
    ports = dicts(rule.get("ports"))
    if not ports:
        return EVERY_PORT
    labels = [_label(p.get("port"), p.get("endPort"), p.get("protocol"), "TCP") for p in ports]
    return None if any(label is None for label in labels) else _sorted(labels)


def cilium_ports(entry: dict[str, Any]) -> Ports:
    """A Cilium egress entry's toPorts; None when it has none or one matches every port (a
    toPorts without ports, port "0" or unset)."""
    to_ports = dicts(entry.get("toPorts"))
    if not to_ports or any(not dicts(t.get("ports")) for t in to_ports):
        return EVERY_PORT
    labels = [
        _label(p.get("port"), p.get("endPort"), p.get("protocol"), "ANY", zero_is_all=True)
        for t in to_ports
        for p in dicts(t.get("ports"))
    ]
    return None if any(label is None for label in labels) else _sorted(labels)


def calico_ports(rule: dict[str, Any]) -> Ports:
    """A Calico rule's destination ports under its protocol; None for every port."""
    ports = mapping(rule.get("destination")).get("ports")
    if not isinstance(ports, list) or not ports:
        return EVERY_PORT
    protocol = text(rule.get("protocol"), "") or ""
    labels: list[str | None] = []
    for port in ports:
        first, _, last = str(port).partition(":")
        labels.append(_label(first, last or None, protocol, "any"))
    return None if any(label is None for label in labels) else _sorted(labels)


def _label(
    port: Any, end: Any, protocol: Any, default: str, *, zero_is_all: bool = False
) -> str | None:
    """ "443/TCP", "8000-8080/TCP" or a named port ("https/TCP"); None for every port."""
    proto = (text(protocol, "") or default).upper()
    if port in (None, ""):
        return None
    start, stop = as_int(port), as_int(end)
    if start is None:
        return f"{port}/{proto}"  # a named port: one port, its number is the pod's
    if zero_is_all and start == 0:
        return None
    if stop is not None and start <= 1 and stop >= 65535:
        return None
    return f"{start}-{stop}/{proto}" if stop is not None and stop != start else f"{start}/{proto}"


def _sorted(labels: list[str | None]) -> tuple[str, ...]:
    return tuple(sorted({label for label in labels if label}))


def merge(*groups: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted({p for g in groups for p in g}))


def denied_note(ports: tuple[str, ...]) -> str:
    """What the evidence says of a deny of the internet limited to ports (Cilium's)."""
    return f"internet denied on ports {', '.join(ports)}"


def subtract(allowed: tuple[str, ...], denied: tuple[str, ...]) -> tuple[str, ...]:
    """The allowed port labels less the denied ones: a deny of a protocol (or ANY, every
    protocol) cuts the numbers it covers out of each allowed range of that protocol; an allow
    of ANY less one protocol keeps its label (the others still pass); a named port goes only
    with the same name, its number being the pod's."""
    left: list[str | None] = []
    for label in allowed:
        port, _, proto = label.rpartition("/")
        span = _span(port)
        if span is None:
            gone = {f"{port}/{proto}", f"{port}/ANY"} & set(denied)
            left += [] if gone else [label]
            continue
        pieces = [span]
        for cut in denied:
            cut_port, _, cut_proto = cut.rpartition("/")
            cut_span = _span(cut_port)
            if cut_span is None or cut_proto not in (proto, "ANY"):
                continue
            pieces = [p for piece in pieces for p in _without(piece, cut_span)]
        left += [f"{a}-{b}/{proto}" if b != a else f"{a}/{proto}" for a, b in pieces]
    return _sorted(left)


def _span(port: str) -> tuple[int, int] | None:
    """ "443" or "8000-8080" as (first, last); None for a named port."""
    first, _, last = port.partition("-")
    start, stop = as_int(first), as_int(last) if last else as_int(first)
    return None if start is None or stop is None else (start, stop)


def _without(span: tuple[int, int], cut: tuple[int, int]) -> list[tuple[int, int]]:
    (a, b), (c, d) = span, cut
    if d < a or c > b:
        return [span]
    return [s for s in ((a, c - 1), (d + 1, b)) if s[0] <= s[1]]
