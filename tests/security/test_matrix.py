"""The permission matrix, generated from the URL resolver (STYLE rules 7 and 10): every page
and endpoint, for anonymous visitors, a user with no role, each role and a tenant viewer of
another tenant, for reads and every write method; then viewer_alpha against beta's and
gamma's objects, and a sweep of every page and list viewer_alpha can open, with filters
pointing at the other tenants, for any trace of them.

A URL with no row in tests/security/matrix_table.py fails test_every_url_is_classified."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.hashers import MD5PasswordHasher  # noqa: F401 - named in settings below
from django.db import transaction
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from tests.security.matrix_table import (
    ADMIN_NAMESPACE,
    OWNER,
    PERSONAS,
    TABLE,
    Access,
)
from tests.security.matrix_world import (
    BETA_SENTINELS,
    GAMMA_SENTINELS,
    HIDDEN_SLUG_PATTERN,
    TENANT_OBJECTS,
    World,
    module_world,
)
from tests.security.urlwalk import WRITE_METHODS, named_routes, parameter_names

ROUTES = named_routes()
MATRIX_NAMES = sorted(n for n in ROUTES if not n.startswith(f"{ADMIN_NAMESPACE}:"))
ADMIN_NAMES = sorted(n for n in ROUTES if n.startswith(f"{ADMIN_NAMESPACE}:"))
REFUSED = (403, 404, 405)
NO_ROLE_NOTICE = "Your account has no gpuposture role yet"
# What nobody without a role may see, whichever tenant it belongs to.
ANY_TENANT = ("Team Alpha", "trainer-0", "team-alpha", *BETA_SENTINELS, *GAMMA_SENTINELS)


def words(*found: str) -> re.Pattern[str]:
    """The strings as whole words: a random token (CSRF, request id) may hold "zZ9" by chance."""
    alternatives = (rf"(?<![a-z0-9]){re.escape(w)}(?![a-z0-9])" for w in found)
    return re.compile("|".join(alternatives), re.IGNORECASE)


PRIVATE = words(*ANY_TENANT)


@pytest.fixture(scope="module")
def matrix(django_db_setup, django_db_blocker, tmp_path_factory):
    """One world for the whole module, in a transaction rolled back at the end; each test
    runs in a savepoint on top, and each request that may write in one more."""
    with module_world(django_db_blocker, tmp_path_factory) as (personas, world):
        yield personas, world


@pytest.fixture(autouse=True)
def _plain_http(settings):
    settings.SECURE_SSL_REDIRECT = False


def send(personas, persona: str, kind: str, method: str, url: str):
    """One request as `persona`, rolled back whatever it changed."""
    with transaction.atomic():
        user = None if persona == "anonymous" else personas[persona]
        if kind == "api":
            client = APIClient()
            if user is not None:
                client.force_authenticate(user)
            body = {"format": "json"} if method != "GET" else {}
            response = getattr(client, method.lower())(url, {}, **body)
        else:
            client = Client()
            if user is not None:
                client.force_login(user)
            response = getattr(client, method.lower())(url, {} if method in ("GET", "POST") else "")
        transaction.set_rollback(True)
    return response


def url_for(name: str, access: Access, world: World, kwargs: dict | None = None) -> str:
    if kwargs is None:
        kwargs = world.own[access.obj] if access.obj else {}
    query = world.query.get(access.query, access.query)
    return reverse(name, kwargs=kwargs) + query


def body(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode(errors="replace")
    return response.content.decode(errors="replace")


SENTINELS = words(*BETA_SENTINELS, *GAMMA_SENTINELS)


def hidden_traces(text: str) -> list[str]:
    return SENTINELS.findall(text) + re.findall(HIDDEN_SLUG_PATTERN, text)


def is_login_redirect(response) -> bool:
    return response.status_code == 302 and "/login/" in response["Location"]


def expect(access: Access, persona: str, method: str, response) -> str | None:
    """None when the answer is the one the matrix expects, else what was expected."""
    code = response.status_code
    if persona == "anonymous":
        if access.kind == "api":
            return None if code in (401, 403) else "401/403"
        return None if is_login_redirect(response) else "a redirect to the login page"
    if persona == "no_role":
        if code in (401, *REFUSED):
            return None
        if access.kind == "page" and code == 200:
            text = body(response)
            private = PRIVATE.findall(text)
            html = response["Content-Type"].startswith("text/html")
            ok = (NO_ROLE_NOTICE in text or not html) and not private
            return None if ok else f"the no-role notice and nothing private (saw {private})"
        return "403 (or the no-role notice)"
    if method == "GET":
        if not access.get:
            return None if code in REFUSED else "403/404/405 (POST-only)"
        if persona in access.read:
            return None if code == 200 else "200"
        return None if code == access.denied else str(access.denied)
    writers = access.writes.get(method)
    if writers is not None and persona in writers:
        ok = code not in (401, *REFUSED) and not is_login_redirect(response)
        return None if ok else "past the permission checks (e.g. 400 for an empty body)"
    return None if code in REFUSED else "403/404/405"


# --- every URL is classified -----------------------------------------------------------------


@pytest.mark.parametrize("name", MATRIX_NAMES)
def test_every_url_is_classified(name):
    first = ROUTES[name][0]
    assert name in TABLE, (
        f"{first.route!r} (URL name {name!r}, view {first.view}) is not in the permission "
        "matrix: add a row for it to TABLE in tests/security/matrix_table.py saying which "
        "personas may read it and which may write through it."
    )


def test_the_matrix_names_no_url_that_is_gone():
    assert set(TABLE) - set(ROUTES) == set(), "remove these rows from matrix_table.TABLE"


@pytest.mark.parametrize(
    "name", [n for n in MATRIX_NAMES if TABLE.get(n, Access("x")).kind == "api"]
)
def test_api_methods_match_the_matrix(name):
    """What a DRF view answers is declared: a write method nobody listed fails here."""
    access = TABLE[name]
    for route in ROUTES[name]:
        if route.methods is None:
            continue
        writes = route.methods & set(WRITE_METHODS)
        assert writes == set(access.writes), (
            f"{route.route} answers {sorted(writes)}; the matrix lists "
            f"{sorted(access.writes)}: declare who may use each write method."
        )
        assert ("GET" in route.methods) == access.get, f"{route.route}: GET is {access.get}"


# --- the matrix ------------------------------------------------------------------------------

MATRIX_ROWS = [n for n in MATRIX_NAMES if TABLE.get(n, Access("x")).kind in ("page", "api")]


@pytest.mark.parametrize("name", MATRIX_ROWS)
def test_permission_matrix(matrix, db, name):
    personas, world = matrix
    access = TABLE[name]
    url = url_for(name, access, world)
    wrong = []
    for method in ("GET", *WRITE_METHODS):
        if access.kind == "page" and method != "GET" and method not in access.writes:
            continue  # a page's other methods are not declared (Django views render GET)
        for persona in PERSONAS:
            response = send(personas, persona, access.kind, method, url)
            problem = expect(access, persona, method, response)
            if problem:
                wrong.append(f"{method} as {persona}: {response.status_code}, expected {problem}")
    assert not wrong, f"{url}\n" + "\n".join(wrong)


OTHER_ROWS = [
    n
    for n in MATRIX_ROWS
    if TABLE[n].obj in TENANT_OBJECTS or TABLE[n].query.startswith("mig_node")
]


def absent(kwargs: dict) -> dict:
    """Parameters naming nothing that exists, of the same types."""
    return {k: 987654321 if isinstance(v, int) else f"absent-{k}" for k, v in kwargs.items()}


def scrubbed(response, values) -> str:
    """The body with the request's own parameters blanked: echoing what was asked for tells
    nothing, naming anything else would."""
    text = body(response)
    for value in sorted({str(v) for v in values}, key=len, reverse=True):
        # Whole words only: an id of 3 is not the 3 of "403 Forbidden".
        text = re.sub(rf"(?<![\w-]){re.escape(value)}(?![\w-])", "<asked>", text)
    return text


@pytest.mark.parametrize("name", OTHER_ROWS)
def test_a_tenant_viewer_reaches_nothing_of_another_tenant(matrix, db, name):
    """viewer_alpha, given beta's or gamma's object, gets exactly what a missing object gets:
    404 (not 403: existence is not told) where alpha's own would be shown, the same words,
    naming nothing; writes refused."""
    personas, world = matrix
    access = TABLE[name]
    if access.query.startswith("mig_node"):
        path = reverse(name)
        pairs = [
            (
                {"cluster": "zz9-lab", "node": "mig-zz9-1"},
                {"cluster": "absent-cluster", "node": "absent-node"},
            )
        ]
        target = lambda kw: f"{path}?cluster={kw['cluster']}&node={kw['node']}"  # noqa: E731
    else:
        pairs = [(kwargs, absent(kwargs)) for kwargs in world.other[access.obj]]
        target = lambda kw: url_for(name, access, world, kw)  # noqa: E731
    expected = 404 if OWNER in access.read else access.denied
    for kwargs, missing in pairs:
        for method in ("GET", *access.writes) if access.get else tuple(access.writes):
            seen = send(personas, OWNER, access.kind, method, target(kwargs))
            twin = send(personas, OWNER, access.kind, method, target(missing))
            where = f"{method} {target(kwargs)}"
            if method == "GET":
                assert seen.status_code == expected, (where, seen.status_code)
            else:
                assert seen.status_code in REFUSED, (where, seen.status_code)
            assert seen.status_code == twin.status_code, where
            text = scrubbed(seen, kwargs.values())
            assert text == scrubbed(twin, missing.values()), where
            assert hidden_traces(text) == [], (where, text[:300])


# --- the tenant-scoping sweep ----------------------------------------------------------------

# Filters and formats pointing at the other tenants: none may bring any of them back.
FILTERS = (
    "",
    "?tenant=beta",
    "?tenant=gamma",
    "?cluster=zz9-lab",
    "?cluster=lab",
    "?namespace=beta-prod",
    "?namespace=gamma-zz9",
    "?provider=zz9-cloud",
    "?node=mig-zz9-1",
    "?status=open&tenant=beta",
    "?status=accepted",
    "?q=beta",
    "?search=gamma",
    "?days=90",
    "?days=90&cluster=zz9-lab",
    "?format=csv",
    "?format=json",
    "?format=sarif",
    "?format=csv&tenant=gamma",
    "?format=sarif&cluster=zz9-lab",
)
# Fixed words of the interface that happen to contain a hidden slug (not data).
STATIC_TEXT = ("1c alpha ; 2c beta",)  # the MIG form's help text
SWEPT = [n for n in MATRIX_ROWS if TABLE[n].get and OWNER in TABLE[n].read]
# Answers that take no filter: the API root, the OpenAPI schema and its docs page.
UNFILTERED = {"api:api-root", "schema", "swagger-ui"}


def echo_free(text: str, query: str) -> str:
    """The body without the filter values asked for, where they stand alone (a form field,
    a pagination link): "beta" asked for and echoed is not a leak, "beta-prod" would be."""
    for fixed in STATIC_TEXT:
        text = text.replace(fixed, "<static>")
    for value in re.findall(r"=([^&]+)", query):
        text = re.sub(rf"(?<![\w-]){re.escape(value)}(?![\w-])", "<asked>", text)
    return text


@pytest.mark.parametrize("name", SWEPT)
def test_a_tenant_viewer_sees_no_trace_of_another_tenant(matrix, db, name):
    """Pages (with their chart JSON), lists, exports, the utilisation API and CSV, the
    OpenAPI schema and docs, as viewer_alpha, whose tenant shares a node with beta."""
    personas, world = matrix
    access = TABLE[name]
    plain = access.obj or access.query or name in UNFILTERED
    queries = ("",) if plain else FILTERS
    leaks = []
    for query in queries:
        url = url_for(name, access, world) + (query if "?" not in access.query else "")
        response = send(personas, OWNER, access.kind, "GET", url)
        if response.status_code >= 500 or response.status_code in (401, 403, 404):
            leaks.append(f"{url}: {response.status_code}")
            continue
        found = hidden_traces(echo_free(body(response), query))
        if found:
            leaks.append(f"{url}: {sorted(set(found))}")
    assert not leaks, "\n".join(leaks)


# --- outside the matrix: public, metrics, allauth, the admin, format suffixes -----------------


def test_public_urls_say_nothing_private(matrix, db):
    personas, _world = matrix
    for name, access in TABLE.items():
        if access.kind != "public":
            continue
        response = send(personas, "anonymous", "page", "GET", reverse(name))
        assert response.status_code == 200, name
        assert "status" in response.json(), name
        assert not PRIVATE.findall(body(response)), name


def test_metrics_answer_only_their_bearer_token(matrix, db, settings):
    personas, _world = matrix
    url = reverse("metrics")
    settings.GPUPOSTURE_METRICS_TOKEN = ""
    for persona in ("anonymous", "security_lead"):
        assert send(personas, persona, "page", "GET", url).status_code == 404, persona
    settings.GPUPOSTURE_METRICS_TOKEN = "scrape-secret-0123456789abcdef"
    for persona in ("anonymous", "no_role", "security_lead", "auditor"):
        assert send(personas, persona, "page", "GET", url).status_code == 401, persona
    scrape = Client().get(url, HTTP_AUTHORIZATION="Bearer scrape-secret-0123456789abcdef")
    assert scrape.status_code == 200
    assert "gpuposture_database_up" in body(scrape)


FILLERS = {
    "object_id": "1",
    "app_label": "auth",
    "content_type_id": "1",
    "provider_id": "x",
    "key": "x-y",
    "uidb36": "x",
    "url": "x",
}


def _filled(name: str) -> str:
    """A URL for a route of a third-party app, its parameters filled with harmless values."""
    route = ROUTES[name][0].route
    kwargs = {p: FILLERS.get(p, "1") for p in parameter_names(route)}
    if name != route and not name.endswith(f":{route}"):
        return reverse(name, kwargs=kwargs)
    # An unnamed pattern (a redirect kept for old links): write its path out.
    path = re.sub(
        r"\(\?P<(\w+)>[^)]*\)|<(?:\w+:)?(\w+)>",
        lambda m: str(kwargs[m.group(1) or m.group(2)]),
        route,
    )
    return "/" + re.sub(r"[\^$]|\\Z", "", path)


@pytest.mark.parametrize("name", sorted(n for n, a in TABLE.items() if a.kind == "allauth"))
def test_account_pages_show_nothing_private(matrix, db, name):
    """django-allauth's pages: answered to anonymous visitors and to each persona without an
    error, and with nothing of any tenant on them."""
    personas, _world = matrix
    url = _filled(name)
    for persona in ("anonymous", "no_role", "viewer_alpha"):
        response = send(personas, persona, "page", "GET", url)
        assert response.status_code in (200, 301, 302, 400, 401, 403, 404, 405), (persona, url)
        assert not PRIVATE.findall(body(response)), (persona, url)


def test_the_admin_is_for_staff_only(matrix, db):
    """Every admin URL, whatever models register: no gpuposture role makes a user staff."""
    personas, _world = matrix
    wrong = []
    for name in ADMIN_NAMES:
        if name in (f"{ADMIN_NAMESPACE}:login", f"{ADMIN_NAMESPACE}:logout"):
            continue
        url = _filled(name)
        for persona in ("anonymous", "security_lead"):
            response = send(personas, persona, "page", "GET", url)
            if not is_login_redirect(response):
                wrong.append(f"{url} as {persona}: {response.status_code}")
    assert len(ADMIN_NAMES) > 20 and not wrong, "\n".join(wrong)


def test_api_routes_have_no_format_suffix_twins(matrix, db):
    """DRF's `.json` twins passed `format` to actions that take no such argument (a 500 on
    /api/v1/tenants/1/posture.json); JSON is the only renderer, so the router makes none."""
    personas, world = matrix
    assert [r.route for rs in ROUTES.values() for r in rs if r.format_suffix] == []
    posture = reverse("api:tenant-posture", kwargs=world.own["tenant"])
    twin = posture.rstrip("/") + ".json"
    assert send(personas, "security_lead", "api", "GET", twin).status_code == 404
