"""The guarded fetcher: https to public addresses only unless the host is allow-listed, the
connection goes to the address that was vetted, redirects are vetted again, bodies and time are
capped. Every server here is on 127.0.0.1; name lookups other than numeric ones and localhost
fail, so no test can reach the network by mistake."""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from gpuposture.base import fetch as fetch_module
from gpuposture.base.fetch import FetchError, address_class, fetch, fetch_json

_real_getaddrinfo = socket.getaddrinfo


@dataclass
class Route:
    body: bytes = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    length: bool = True  # send Content-Length (else the body ends when the connection closes)
    delay: float = 0.0


class LocalServer:
    """An HTTP(S) server on 127.0.0.1 answering `routes` (path without query -> Route or bytes)
    and recording each request as (path with query, headers)."""

    def __init__(self, routes: dict[str, Route | bytes]) -> None:
        self.routes = routes
        self.seen: list[tuple[str, dict[str, str]]] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.port = self.httpd.server_address[1]

    def url(self, path: str, *, host: str = "127.0.0.1", scheme: str = "http") -> str:
        return f"{scheme}://{host}:{self.port}{path}"

    def paths(self) -> list[str]:
        return [path for path, _ in self.seen]


def _handler(server: LocalServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the name http.server calls)
            server.seen.append((self.path, dict(self.headers)))
            route = server.routes.get(self.path.split("?")[0], Route(b"not here", 404))
            route = Route(route) if isinstance(route, bytes) else route
            time.sleep(route.delay)
            self.send_response(route.status)
            for name, value in route.headers.items():
                self.send_header(name, value)
            if route.length:
                self.send_header("Content-Length", str(len(route.body)))
            self.end_headers()
            self.wfile.write(route.body)

        def log_message(self, *args: object) -> None:
            pass  # quiet test output

    return Handler


@contextmanager
def local_server(
    routes: dict[str, Route | bytes], *, tls: ssl.SSLContext | None = None
) -> Iterator[LocalServer]:
    server = LocalServer(routes)
    if tls:
        server.httpd.socket = tls.wrap_socket(server.httpd.socket, server_side=True)
    server.httpd.handle_error = lambda *args: None
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()


def fake_dns(monkeypatch: pytest.MonkeyPatch, names: dict[str, str]) -> list[str]:
    """Resolve `names` (host -> IP) in the test; returns the list of names looked up."""
    looked_up: list[str] = []

    def getaddrinfo(host, port, *args, **kwargs):
        looked_up.append(host)
        return _local_getaddrinfo(names.get(host, host), port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return looked_up


def _local_getaddrinfo(host, port, *args, **kwargs):
    if host != "localhost":
        kwargs["flags"] = kwargs.get("flags", 0) | socket.AI_NUMERICHOST
    try:
        return _real_getaddrinfo(host, port, *args, **kwargs)
    except socket.gaierror as exc:
        raise socket.gaierror(exc.errno, f"no DNS in tests ({host})") from exc


@pytest.fixture(autouse=True)
def _no_dns(monkeypatch: pytest.MonkeyPatch, settings) -> None:
    monkeypatch.setattr(socket, "getaddrinfo", _local_getaddrinfo)
    settings.GPUPOSTURE_FETCH_ALLOWED_HOSTS = []


@pytest.fixture
def server() -> Iterator[LocalServer]:
    routes: dict[str, Route | bytes] = {
        "/a.json": b'{"a": 1}',
        "/text": b"plain text",
        "/big": b"x" * 5000,
        "/big-streamed": Route(b"x" * 5000, length=False),
        "/slow": Route(b"{}", delay=2),
        "/hop": Route(status=301, headers={"Location": "/a.json"}),
        "/loop": Route(status=302, headers={"Location": "/loop"}),
        "/to-private": Route(status=302, headers={"Location": "http://10.0.0.1/"}),
        "/to-metadata": Route(
            status=307, headers={"Location": "https://169.254.169.254/latest/meta-data"}
        ),
        "/no-location": Route(status=302),
    }
    with local_server(routes) as running:
        yield running


def test_an_allow_listed_host_may_use_plain_http_on_a_private_address(server, settings):
    settings.GPUPOSTURE_FETCH_ALLOWED_HOSTS = ["127.0.0.1"]
    assert fetch(server.url("/a.json")) == b'{"a": 1}'
    assert fetch_json(server.url("/a.json"), params={"q": "up{job='x'}"}) == {"a": 1}
    assert server.seen[-1][0] == "/a.json?q=up%7Bjob%3D%27x%27%7D"
    assert server.seen[-1][1]["Host"] == f"127.0.0.1:{server.port}"


def test_an_allow_list_entry_with_a_port_allows_only_that_port(server, settings):
    settings.GPUPOSTURE_FETCH_ALLOWED_HOSTS = [f"127.0.0.1:{server.port}"]
    assert fetch(server.url("/a.json")) == b'{"a": 1}'
    settings.GPUPOSTURE_FETCH_ALLOWED_HOSTS = ["127.0.0.1:1"]
    with pytest.raises(FetchError, match="plain http is refused"):
        fetch(server.url("/a.json"))


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://127.0.0.1/", "127.0.0.1 (loopback address)"),
        ("https://10.1.2.3/", "10.1.2.3 (private address)"),
        ("https://169.254.169.254/latest/meta-data", "(link-local address)"),
        ("https://[::1]/", "::1 (loopback address)"),
        ("https://[::ffff:127.0.0.1]/", "(loopback address)"),
        ("https://[fe80::1]/", "(link-local address)"),
        ("https://localhost/", "(loopback address)"),
        ("https://100.64.0.1/", "(shared (carrier-grade NAT) address)"),
        ("https://0.0.0.0/", "(unspecified address)"),
        ("https://224.0.0.1/", "(multicast address)"),
        ("https://240.0.0.1/", "(reserved address)"),
        ("file:///etc/passwd", "only http(s) URLs are fetched, not file"),
        ("gopher://127.0.0.1:70/_stats", "only http(s) URLs are fetched, not gopher"),
        ("https:///no-host", "the URL has no host"),
        ("https://127.0.0.1:99999/", "bad port"),
        ("https://no-such-host.test/", "cannot resolve no-such-host.test"),
    ],
)
def test_without_the_allow_list_only_public_https_is_fetched(url, reason):
    with pytest.raises(FetchError) as refused:
        fetch(url)
    assert reason in str(refused.value)


def test_plain_http_is_refused_unless_allow_listed(server):
    with pytest.raises(FetchError, match="plain http is refused"):
        fetch(server.url("/a.json"))
    assert not server.seen


def test_user_info_is_refused_and_never_echoed():
    with pytest.raises(FetchError, match="user info") as refused:
        fetch("https://admin:s3cret@example.com/feed.json")
    assert "s3cret" not in str(refused.value) and "admin" not in str(refused.value)
    assert refused.value.url == "https://example.com/feed.json"


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("8.8.8.8", None),
        ("2606:4700:4700::1111", None),
        ("192.168.1.1", "private"),
        ("172.16.0.1", "private"),
        ("fd00::1", "private"),
        ("::ffff:169.254.169.254", "link-local"),
        ("::ffff:10.0.0.1", "private"),
        ("100.127.255.254", "shared (carrier-grade NAT)"),
        ("::", "unspecified"),
        ("ff02::1", "multicast"),
    ],
)
def test_address_classes(address, kind):
    assert address_class(address) == kind


def test_redirects_are_followed_and_each_one_is_vetted(server, settings):
    settings.GPUPOSTURE_FETCH_ALLOWED_HOSTS = ["127.0.0.1"]
    assert fetch(server.url("/hop")) == b'{"a": 1}'
    with pytest.raises(FetchError, match=r"http://10\.0\.0\.1/: plain http is refused"):
        fetch(server.url("/to-private"))
    with pytest.raises(FetchError, match="169.254.169.254 .link-local address"):
        fetch(server.url("/to-metadata"))
    with pytest.raises(FetchError, match="more than 5 redirects"):
        fetch(server.url("/loop"))
    assert server.paths().count("/loop") == 6  # the first request and five redirects
    with pytest.raises(FetchError, match="HTTP 302 without a Location"):
        fetch(server.url("/no-location"))


def test_caller_headers_do_not_follow_a_redirect_to_another_host(server, settings):
    settings.GPUPOSTURE_FETCH_ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
    server.routes["/away"] = Route(
        status=302, headers={"Location": server.url("/a.json", host="localhost")}
    )
    fetch(server.url("/away"), headers={"Authorization": "Bearer t0ken"})
    (_, first), (_, second) = server.seen
    assert first["Authorization"] == "Bearer t0ken" and "Authorization" not in second
    assert second["Host"] == f"localhost:{server.port}"


def test_status_size_time_and_json_are_enforced(server, settings):
    settings.GPUPOSTURE_FETCH_ALLOWED_HOSTS = ["127.0.0.1"]
    with pytest.raises(FetchError, match="/missing: HTTP 404 Not Found"):
        fetch(server.url("/missing"))
    with pytest.raises(FetchError, match="not JSON"):
        fetch_json(server.url("/text"))
    settings.GPUPOSTURE_FETCH_MAX_BYTES = 1000
    for path in ("/big", "/big-streamed"):  # declared too large, or found so while reading
        with pytest.raises(FetchError, match="larger than 1000 bytes"):
            fetch(server.url(path))
    settings.GPUPOSTURE_FETCH_MAX_BYTES = 1024 * 1024
    server.routes["/big"] = b"x" * (1024 * 1024 + 1)
    with pytest.raises(FetchError, match="larger than 1 MB"):
        fetch(server.url("/big"))
    settings.GPUPOSTURE_FETCH_TIMEOUT_SECONDS = 1
    with pytest.raises(FetchError, match="timed out"):
        fetch(server.url("/slow"))


def test_a_name_is_vetted_through_the_address_it_resolves_to(monkeypatch):
    looked_up = fake_dns(monkeypatch, {"feed.example.com": "10.20.30.40"})
    with pytest.raises(FetchError, match=r"feed.example.com resolves to 10\.20\.30\.40 .private"):
        fetch("https://feed.example.com/.well-known/csaf/provider-metadata.json")
    assert looked_up == ["feed.example.com"]


def test_the_connection_goes_to_the_vetted_address_with_the_original_host(
    server, settings, monkeypatch
):
    settings.GPUPOSTURE_FETCH_ALLOWED_HOSTS = [f"mirror.internal:{server.port}"]
    looked_up = fake_dns(monkeypatch, {"mirror.internal": "127.0.0.1"})
    assert fetch(server.url("/a.json", host="mirror.internal")) == b'{"a": 1}'
    assert server.seen[0][1]["Host"] == f"mirror.internal:{server.port}"
    # Resolved once, when vetted; the socket was opened to that address, not to the name.
    assert looked_up.count("mirror.internal") == 1


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> Path:
    """A self-signed certificate (and key, same file) for mirror.internal."""
    if not shutil.which("openssl"):
        pytest.skip("openssl is needed to make a test certificate")
    path = tmp_path_factory.mktemp("tls") / "mirror.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=mirror.internal",
            "-addext",
            "subjectAltName=DNS:mirror.internal",
            "-keyout",
            str(path),
            "-out",
            str(path),
        ],
        check=True,
        capture_output=True,
    )
    return path


def test_https_checks_the_certificate_against_the_name_in_the_url(
    certificate, settings, monkeypatch
):
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(certificate)
    settings.GPUPOSTURE_FETCH_ALLOWED_HOSTS = ["mirror.internal", "other.internal"]
    fake_dns(monkeypatch, {"mirror.internal": "127.0.0.1", "other.internal": "127.0.0.1"})
    with local_server({"/a.json": b"{}"}, tls=tls) as running:
        url = running.url("/a.json", host="mirror.internal", scheme="https")
        with pytest.raises(FetchError, match="CERTIFICATE_VERIFY_FAILED"):
            fetch(url)  # self-signed: not trusted by default
        default_context = ssl.create_default_context
        monkeypatch.setattr(
            fetch_module.ssl, "create_default_context", lambda: default_context(cafile=certificate)
        )
        assert fetch(url) == b"{}"  # connected to 127.0.0.1, verified as mirror.internal
        with pytest.raises(FetchError, match="CERTIFICATE_VERIFY_FAILED"):
            fetch(running.url("/a.json", host="other.internal", scheme="https"))
