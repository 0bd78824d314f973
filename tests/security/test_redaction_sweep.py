"""The redaction sweep (issue 16, item 3): a tenant whose every name carries MARKER shares
alpha's GPUs (tests/security/marker_world.py); viewer_alpha then reads every GET URL they
can reach and MARKER must appear in none of the answers: pages with their chart data, API
lists and the detail of every object alpha may see, exports in every format, CSV, SARIF.

The URLs come from the resolver (tests/security/urlwalk.py) and the permission matrix
(matrix_table.TABLE, which every URL must have a row in): a new page or endpoint is swept
without touching this file. Each page's own links (pagination, filters, downloads, details)
are followed too, so what a viewer can click is read as well as what the resolver names."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from tests.security.marker_world import DRA_CLAIM, MARKER, SLUG, add_marker_tenant
from tests.security.matrix_table import ADMIN_NAMESPACE, OWNER, TABLE
from tests.security.matrix_world import World, build_world, module_world
from tests.security.urlwalk import named_routes

ROUTES = named_routes()
SWEPT = sorted(
    n
    for n in ROUTES
    if not n.startswith(f"{ADMIN_NAMESPACE}:")
    and n in TABLE
    and TABLE[n].kind in ("page", "api")
    and TABLE[n].get
    and OWNER in TABLE[n].read
)
# Lists and exports are also read filtered and in every format, some filters naming MARKER.
QUERIES = (
    "",
    "?status=open",
    "?status=accepted",
    "?status=resolved",
    "?days=90",
    "?days=7",
    "?format=json",
    "?format=csv",
    "?format=sarif",
    f"?tenant={SLUG}",
    "?cluster=lab",
    f"?namespace={MARKER}-train",
    f"?q={MARKER}",
    f"?search={MARKER}",
    "?page=2",
    "?check=SHARE-001",
    "?check=LEAK-001",
    "?check=DRIFT-001",
    "?node=gpu-ts-1",
)
# Where a page's own links lead that is not ours to sweep (static files, signing out).
NOT_FOLLOWED = ("/static/", "/admin/", "/accounts/logout/", "/api/docs/", "/api/schema/")
MAX_REQUESTS = 3000
FOUND = re.compile(re.escape(MARKER), re.IGNORECASE)


@pytest.fixture(scope="module")
def sweep_world(django_db_setup, django_db_blocker, tmp_path_factory):
    """The matrix's world plus the marker tenant, once for the module, rolled back after."""

    def build(personas: dict, directory: Path) -> World:
        world = build_world(personas, directory)
        add_marker_tenant(personas, directory)
        return world

    with module_world(django_db_blocker, tmp_path_factory, build) as (personas, world):
        yield personas, world


@pytest.fixture(autouse=True)
def _plain_http(settings):
    settings.SECURE_SSL_REDIRECT = False


def _objects(user) -> dict[str, Callable[[], Iterator[dict]]]:
    """For each kind of object a URL names (matrix_world's names): the URL parameters of
    every one of them the user may see."""
    from inventory.models import Bulletin, Cluster, DriftEvent, Node, Pod, SyncRun
    from posture.models import Action, Finding
    from posture.rules import CHECKS
    from providers.models import Provider
    from telemetry.models import ResetAttestation
    from tenants.models import SharingRequest, Tenant, TrustClass

    def each(model, **params: str) -> Callable[[], Iterator[dict]]:
        """{"pk": "pk"}: every visible object's pk as the URL's `pk`."""
        rows = model.objects.visible_to(user).values_list(*params.values())
        return lambda: (dict(zip(params, row, strict=True)) for row in rows)

    return {
        "tenant_slug": each(Tenant, slug="slug"),
        "tenant": each(Tenant, pk="pk"),
        "finding": each(Finding, pk="pk"),
        "node": each(Node, pk="pk"),
        "pod": each(Pod, pk="pk"),
        "sync_run": each(SyncRun, pk="pk"),
        "drift_event": each(DriftEvent, pk="pk"),
        "bulletin": each(Bulletin, pk="pk"),
        "sharing_request": each(SharingRequest, pk="pk"),
        "reset": each(ResetAttestation, pk="pk"),
        "cluster": each(Cluster, name="name"),
        "node_page": each(Node, cluster="cluster__name", name="name"),
        "provider": each(Provider, slug="slug"),
        "trust_class": each(TrustClass, slug="slug"),
        "check_page": lambda: ({"check_id": c} for c in CHECKS),
        "check": lambda: ({"pk": c} for c in CHECKS),
        "action": each(Action, key="key"),
    }


def _mig_node_queries(user) -> list[str]:
    from inventory.models import Node

    nodes = Node.objects.visible_to(user).filter(sharing_strategy="mig")
    return [f"?cluster={c}&node={n}" for c, n in nodes.values_list("cluster__name", "name")]


def start_urls(user) -> list[tuple[str, str, str]]:
    """(route name, kind, URL) for every swept route: each object the user may see, each
    query."""
    objects = _objects(user)
    urls: list[tuple[str, str, str]] = []
    for name in SWEPT:
        access = TABLE[name]
        if access.query.startswith("mig_node"):
            paths = [reverse(name) + q for q in _mig_node_queries(user)]
        elif access.obj:
            assert access.obj in objects, f"teach _objects() the URL parameters of {access.obj!r}"
            paths = [reverse(name, kwargs=kw) for kw in objects[access.obj]()]
        else:
            # A list that needs a query (the export's format) is read with it, then as others.
            queries = (access.query, *QUERIES[1:]) if access.query else QUERIES
            paths = [reverse(name) + q for q in queries]
        urls += [(name, access.kind, path) for path in paths]
    return urls


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for attr, value in attrs:
            if attr in ("href", "src") and value:
                self.found.append(value)


def links(text: str) -> list[str]:
    """The site's own URLs a page links to (no fragment)."""
    parser = _Links()
    parser.feed(text)
    out = []
    for href in parser.found:
        parts = urlsplit(href)
        if parts.scheme or parts.netloc or not parts.path.startswith("/"):
            continue
        if parts.path.startswith(NOT_FOLLOWED):
            continue
        out.append(parts.path + (f"?{parts.query}" if parts.query else ""))
    return out


def body(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode(errors="replace")
    return response.content.decode(errors="replace")


def echo_free(text: str, url: str) -> str:
    """The answer without the values the URL itself asked for (a filter form shows them)."""
    for value in re.findall(r"=([^&]+)", urlsplit(url).query):
        text = re.sub(rf"(?<![\w-]){re.escape(value)}(?![\w-])", "<asked>", text)
    return text


def where_found(text: str) -> str:
    """The first place MARKER stands in `text`, with what surrounds it; "" if nowhere."""
    match = FOUND.search(text)
    if match is None:
        return ""
    return repr(text[max(0, match.start() - 60) : match.end() + 40])


def read_everything(user) -> tuple[dict[str, str], list[str]]:
    """Every URL reachable from the start URLs by the pages' links: URL -> what was found
    (empty when MARKER is absent), and what answered wrongly: a start URL without one of
    QUERIES anything but 200 (a list may refuse a filter it does not take, a second page
    may not exist, a page may link to a form of another role), any URL a server error."""
    page, api = Client(), APIClient()
    page.force_login(user)
    api.force_authenticate(user)
    queue = [(kind, url, not url.endswith(QUERIES[1:])) for _name, kind, url in start_urls(user)]
    seen: dict[str, str] = {}
    wrong: list[str] = []
    while queue and len(seen) < MAX_REQUESTS:
        kind, url, strict = queue.pop(0)
        if url in seen:
            continue
        response = (api if kind == "api" else page).get(url)
        text = body(response)
        headers = " ".join(f"{k}: {v}" for k, v in response.items())
        seen[url] = where_found(echo_free(f"{headers}\n{text}", url))
        code = response.status_code
        if code >= 500 or (strict and code != 200):
            wrong.append(f"{url}: {code}")
        if code == 200 and response.get("Content-Type", "").startswith("text/html"):
            queue += [("page", link, False) for link in links(text) if link not in seen]
    assert len(seen) < MAX_REQUESTS, "the sweep did not finish: raise MAX_REQUESTS"
    return seen, wrong


def test_the_marker_world_names_the_marker_to_those_who_read_everything(sweep_world, db):
    """The sweep proves something only if the marker is there to find: the security lead's
    findings, resets, sync runs and drift name it, and so do alpha's own findings' stored
    evidence (the co-tenancy and handover findings are about the marker)."""
    from posture.models import Finding

    personas, _world = sweep_world
    lead = APIClient()
    lead.force_authenticate(personas["security_lead"])
    urls = (
        "/api/v1/findings/export/?format=json&tenant=alpha",
        "/api/v1/reset-attestations/",
        "/api/v1/sync-runs/",
        "/api/v1/drift-events/",
    )
    for url in urls:
        assert FOUND.search(body(lead.get(url))), url
    alpha = Finding.objects.filter(tenants__slug="alpha", status="open")
    about_marker = {f.check_id for f in alpha if FOUND.search(f"{f.title} {f.evidence}")}
    assert {"SHARE-001", "LEAK-001", "DRIFT-001"} <= about_marker, about_marker
    # The marker's DRA claim is named in alpha's co-tenancy evidence on the DRA node.
    assert any(DRA_CLAIM in str(f.evidence) for f in alpha if f.check_id == "SHARE-001")


def test_a_tenant_viewer_reads_no_trace_of_another_tenant_anywhere(sweep_world, db):
    personas, _world = sweep_world
    seen, wrong = read_everything(personas[OWNER])
    leaks = [f"{url}: {found}" for url, found in seen.items() if found]
    assert len(seen) > 200, f"only {len(seen)} URLs read: is the sweep reaching the pages?"
    assert not wrong, "\n".join(wrong)
    assert not leaks, f"{len(leaks)} of {len(seen)} answers name {MARKER}:\n" + "\n".join(leaks)


def test_every_swept_route_is_read(sweep_world, db):
    """No route the viewer may read is left out for want of an object to fill it."""
    personas, _world = sweep_world
    assert {name for name, _kind, _url in start_urls(personas[OWNER])} == set(SWEPT)
