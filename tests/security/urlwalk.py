"""Every URL of the project, from the resolver: names (with their namespaces), routes, views
and, for the API, the HTTP methods each one answers."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.urls import URLPattern, URLResolver, get_resolver

WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")


@dataclass(frozen=True)
class Route:
    name: str  # "namespace:name"; the route stands for the name of an unnamed pattern
    route: str
    view: str
    methods: frozenset[str] | None  # None: a plain Django view, whose methods are not declared
    format_suffix: bool  # DRF's `.json` twin of another route of the same name

    @property
    def namespace(self) -> str:
        return self.name.split(":", 1)[0] if ":" in self.name else ""


def _methods(callback) -> frozenset[str] | None:
    actions = getattr(callback, "actions", None)
    if actions:  # a DRF viewset route: the router's method -> action map
        return frozenset(m.upper() for m in actions)
    cls = getattr(callback, "cls", None) or getattr(callback, "view_class", None)
    if cls is not None and hasattr(cls, "http_method_names"):
        names = ("get", "post", "put", "patch", "delete")
        return frozenset(m.upper() for m in names if hasattr(cls, m))
    return None


def routes(resolver: URLResolver | None = None, prefix: str = "", ns: str = "") -> list[Route]:
    found: list[Route] = []
    for entry in (resolver or get_resolver()).url_patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            inner = f"{ns}{entry.namespace}:" if entry.namespace else ns
            found.extend(routes(entry, route, inner))
        elif isinstance(entry, URLPattern):
            callback = entry.callback
            view = f"{callback.__module__}.{getattr(callback, '__name__', callback)}"
            found.append(
                Route(
                    name=f"{ns}{entry.name or route}",
                    route=route,
                    view=view,
                    methods=_methods(callback),
                    format_suffix=bool(re.search(r"\(\?P<format>|<drf_format_suffix", route)),
                )
            )
    return found


def named_routes() -> dict[str, list[Route]]:
    by_name: dict[str, list[Route]] = {}
    for r in routes():
        by_name.setdefault(r.name, []).append(r)
    return by_name


def parameter_names(route: str) -> list[str]:
    """The keyword arguments a route takes (regex groups and path converters)."""
    return [a or b for a, b in re.findall(r"\(\?P<(\w+)>|<(?:\w+:)?(\w+)>", route)]
