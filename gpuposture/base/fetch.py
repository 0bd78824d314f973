"""Fetch a URL the outside world chose (a CSAF feed, a Prometheus API) without letting it reach
inside our network (SSRF). The rule: https only, and every address the host resolves to must be
public; a host an admin put in GPUPOSTURE_FETCH_ALLOWED_HOSTS (an internal mirror) may also use
plain http and private addresses. The host is resolved once and the socket opened to the vetted
address itself, so a second DNS answer cannot rebind the name to 169.254.169.254; every redirect
is vetted by the same rule; the body is capped in bytes and the whole fetch in time: connect,
TLS, headers and body together, however slowly the server drips them (each read of the socket
may wait only what is left of GPUPOSTURE_FETCH_TIMEOUT_SECONDS). An IPv6 address that embeds an
IPv4 one (IPv4-mapped or -compatible, 6to4, Teredo, NAT64) is judged by that IPv4 address too,
and site-local fec0::/10 is not public."""

from __future__ import annotations

import http.client
import io
import ipaddress
import socket
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any
from urllib.parse import urlencode, urljoin, urlsplit

from django.conf import settings

from gpuposture.base.safe_parse import SafeParseError, load_json

MAX_REDIRECTS = 5
_REDIRECT_STATUSES = (301, 302, 303, 307, 308)
_CHUNK = 64 * 1024
_SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT: not ours, not public
_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052: the IPv4 address is the last 32 bits
_ALLOW_SETTING = "GPUPOSTURE_FETCH_ALLOWED_HOSTS"


class FetchError(Exception):
    """A URL refused by the guard or that could not be read; the message says which and why.
    `status` is the HTTP status when the server answered (a POST's caller may retry a 5xx)."""

    def __init__(self, url: str, reason: str, *, status: int | None = None) -> None:
        super().__init__(f"{_shown(url)}: {reason}")
        self.url, self.reason, self.status = _shown(url), reason, status


@dataclass(frozen=True)
class _Target:
    url: str
    scheme: str
    host: str
    port: int
    request_path: str  # path and query, as sent on the request line
    addresses: tuple[str, ...]  # vetted: the only places we connect to

    @property
    def origin(self) -> tuple[str, str, int]:
        return self.scheme, self.host, self.port


def fetch(
    url: str,
    *,
    params: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    accept: str = "application/json",
) -> bytes:
    """GET `url` (with `params` added to its query) under the guard; return the body."""
    if params:
        url += ("&" if urlsplit(url).query else "?") + urlencode(params)
    deadline = time.monotonic() + settings.GPUPOSTURE_FETCH_TIMEOUT_SECONDS
    sent = {"Accept": accept, "User-Agent": "gpuposture", **(headers or {})}
    target = vet_url(url)
    for _ in range(MAX_REDIRECTS + 1):
        location = _get(target, sent, deadline)
        if isinstance(location, bytes):
            return location
        next_target = vet_url(urljoin(target.url, location))
        if next_target.origin != target.origin:
            # Credentials the caller meant for one server must not follow a redirect elsewhere.
            sent = {"Accept": accept, "User-Agent": "gpuposture"}
        target = next_target
    raise FetchError(url, f"more than {MAX_REDIRECTS} redirects")


def fetch_json(
    url: str, *, params: Mapping[str, str] | None = None, headers: Mapping[str, str] | None = None
) -> object:
    """`fetch`, then decode the body as UTF-8 JSON."""
    raw = fetch(url, params=params, headers=headers)
    try:
        return load_json(raw, max_bytes=settings.GPUPOSTURE_FETCH_MAX_BYTES)
    except SafeParseError as exc:
        raise FetchError(url, f"not JSON: {exc}") from exc


def vet_url(url: str, *, allow_setting: str = _ALLOW_SETTING) -> _Target:
    """Apply the rule to `url` (resolving its host once) or raise FetchError saying why.
    `allow_setting` names the settings list of hosts exempt from the public-address rule."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise FetchError(url, f"only http(s) URLs are fetched, not {parts.scheme or 'none'}")
    if "@" in parts.netloc:
        raise FetchError(url, "URLs with user info (user:password@) are refused")
    host = (parts.hostname or "").lower()
    if not host:
        raise FetchError(url, "the URL has no host")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise FetchError(url, f"bad port: {exc}") from exc
    allowed = _allowed(host, port, allow_setting)
    if parts.scheme != "https" and not allowed:
        raise FetchError(url, f"plain http is refused (only hosts in {allow_setting} may)")
    addresses = _resolve(url, host, port)
    if not allowed:
        for address in addresses:
            kind = address_class(address)
            if kind:
                raise FetchError(
                    url,
                    f"{host} resolves to {address} ({kind} address); only hosts "
                    f"in {allow_setting} may use non-public addresses",
                )
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return _Target(url, parts.scheme, host, port, path, addresses)


def address_class(address: str) -> str | None:
    """Why `address` is not public ("loopback", "private"...), or None when it is."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv4Address):
        return _class(ip)
    embedded = embedded_ipv4(ip)
    for via, ipv4 in embedded:
        kind = _class(ipv4)
        if kind:
            if via == "IPv4-mapped":
                return kind
            return f"{kind} {ipv4} in {'an' if via[0] in 'AEIOU' else 'a'} {via}"
    if embedded and embedded[0][0] in ("IPv4-mapped", "NAT64"):
        return None  # a translation: where it goes is that IPv4 address, which is public
    return _class(ip)


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    """The IPv4 addresses an IPv6 address carries, each with the mechanism that reaches it."""
    if ip.ipv4_mapped:
        return [("IPv4-mapped", ip.ipv4_mapped)]  # ::ffff:127.0.0.1 reaches 127.0.0.1
    if ip.sixtofour:
        return [("6to4", ip.sixtofour)]  # 2002:AABB:CCDD::/48
    if ip.teredo:
        server, client = ip.teredo  # the client's address is stored XOR 0xffffffff
        return [("Teredo", client), ("Teredo", server)]
    low = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip in _NAT64:
        return [("NAT64", low)]
    if int(ip) >> 32 == 0 and int(ip) > 1:  # ::a.b.c.d (deprecated); not :: or ::1
        return [("IPv4-compatible", low)]
    return []


def _class(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    checks = (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),  # 169.254.169.254, the cloud metadata service
        ("site-local", ip.version == 6 and ip.is_site_local),  # fec0::/10, deprecated
        ("multicast", ip.is_multicast),
        ("shared (carrier-grade NAT)", ip.version == 4 and ip in _SHARED),
        ("reserved", ip.is_reserved),  # before private, which also covers 240.0.0.0/4
        ("private", ip.is_private),
        ("non-public", not ip.is_global),
    )
    return next((name for name, hit in checks if hit), None)


def _allowed(host: str, port: int, allow_setting: str = _ALLOW_SETTING) -> bool:
    named = f"[{host}]" if ":" in host else host
    entries = {e.strip().lower() for e in getattr(settings, allow_setting)}
    return bool(entries & {host, named, f"{named}:{port}"})


def _resolve(url: str, host: str, port: int) -> tuple[str, ...]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise FetchError(url, f"cannot resolve {host}: {exc}") from exc
    # An IPv6 scope ("fe80::1%eth0") is not part of the address being vetted.
    addresses = tuple(dict.fromkeys(str(info[4][0]).split("%")[0] for info in infos))
    if not addresses:
        raise FetchError(url, f"{host} resolves to no address")
    return addresses


def _get(target: _Target, headers: Mapping[str, str], deadline: float) -> bytes | str:
    """One request: the body, or the Location of a redirect."""
    url = target.url
    cls = _PinnedHTTPS if target.scheme == "https" else _PinnedHTTP
    _left(url, deadline)
    conn = cls(target.host, target.port, addresses=target.addresses, deadline=deadline)
    try:
        conn.request("GET", target.request_path, headers=dict(headers))
        response = conn.getresponse()
        if response.status in _REDIRECT_STATUSES:
            location = response.getheader("Location")
            if not location:
                raise FetchError(url, f"HTTP {response.status} without a Location")
            return location
        if not 200 <= response.status < 300:
            raise FetchError(url, f"HTTP {response.status} {response.reason}".rstrip())
        return _read(url, response, deadline)
    except TimeoutError as exc:  # a socket's wait for the rest of the deadline ran out
        raise FetchError(url, _too_slow()) from exc
    except (OSError, http.client.HTTPException) as exc:
        raise FetchError(url, str(exc) or type(exc).__name__) from exc
    finally:
        conn.close()


def post(
    url: str, *, body: bytes, headers: Mapping[str, str], allow_setting: str = _ALLOW_SETTING
) -> int:
    """POST `body` to `url` under the same guard (vetted and pinned address, one deadline);
    the 2xx status, or FetchError (with `status` when the server answered). A redirect is an
    error: following it would re-send the body somewhere the URL's owner did not name."""
    deadline = time.monotonic() + settings.GPUPOSTURE_FETCH_TIMEOUT_SECONDS
    target = vet_url(url, allow_setting=allow_setting)
    cls = _PinnedHTTPS if target.scheme == "https" else _PinnedHTTP
    conn = cls(target.host, target.port, addresses=target.addresses, deadline=deadline)
    sent = {"User-Agent": "gpuposture", "Content-Length": str(len(body)), **headers}
    try:
        conn.request("POST", target.request_path, body=body, headers=sent)
        response = conn.getresponse()
        response.read(_CHUNK)  # the answer's body is not used; read a little so it closes clean
        if not 200 <= response.status < 300:
            reason = f"HTTP {response.status} {response.reason}".rstrip()
            raise FetchError(url, reason, status=response.status)
        return response.status
    except TimeoutError as exc:
        raise FetchError(url, _too_slow()) from exc
    except (OSError, http.client.HTTPException) as exc:
        raise FetchError(url, str(exc) or type(exc).__name__) from exc
    finally:
        conn.close()


def _read(url: str, response: http.client.HTTPResponse, deadline: float) -> bytes:
    limit = settings.GPUPOSTURE_FETCH_MAX_BYTES
    too_large = FetchError(url, f"larger than {_size(limit)}")
    declared = response.getheader("Content-Length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise too_large
    body = bytearray()
    while chunk := response.read(_CHUNK):
        body += chunk
        if len(body) > limit:
            raise too_large
        _left(url, deadline)  # a server dripping bytes must not hold us past the timeout
    return bytes(body)


def _left(url: str, deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise FetchError(url, _too_slow())
    return left


def _too_slow() -> str:
    seconds = settings.GPUPOSTURE_FETCH_TIMEOUT_SECONDS
    return f"timed out: took longer than {seconds} s (connecting and reading, all together)"


def _remaining(deadline: float) -> float:
    """What is left of the deadline for one blocking socket call; TimeoutError if nothing."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the fetch's deadline passed")
    return left


def _size(limit: int) -> str:
    mb = 1024 * 1024
    return f"{limit // mb} MB" if limit % mb == 0 else f"{limit} bytes"


def _shown(url: str) -> str:
    return shown_url(url)


SHOWN_URL_CHARS = 500  # a URL field's length; longer is not a URL a person typed


def shown_url(url: str) -> str:
    """A URL as messages, logs and audit records show it: scheme://host[:port]/path. User info,
    query and fragment are dropped, not only user:password@: a token travels as well in
    ?access_token= or #id_token=. Without a scheme (prom:9090, bob:pw@host) or unparseable,
    everything up to the last @ and from the first ? or # goes; a file path stays as given."""
    text = url.strip()
    try:
        parts = urlsplit(text)
        host, port = parts.hostname, parts.port
    except ValueError:  # a bad port or bracket: not a URL we can take apart
        parts, host, port = None, None, None
    if (
        parts is not None
        and parts.scheme
        and host
        and text.lower().startswith(f"{parts.scheme}://")
    ):
        netloc = f"[{host}]" if ":" in host else host
        shown = f"{parts.scheme}://{netloc}" + (f":{port}" if port is not None else "")
        return (shown + parts.path)[:SHOWN_URL_CHARS]
    bare = text.rpartition("@")[2]
    for mark in "?#":
        bare = bare.partition(mark)[0]
    return bare[:SHOWN_URL_CHARS]


class _DeadlineReader(io.RawIOBase):
    """The socket as http.client reads it (status line, headers, body), each receive waiting
    at most what is left of the deadline: a server sending a byte a second cannot stretch a
    read, as a plain socket timeout (reset by every byte) would let it."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        # The socket's own raw file: it keeps the socket open while the response is read
        # after the connection lets go of it (Connection: close), as http.client expects.
        self._raw, self._sock, self._deadline = sock.makefile("rb", buffering=0), sock, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        self._sock.settimeout(_remaining(self._deadline))
        return self._raw.readinto(buffer)

    def close(self) -> None:
        self._raw.close()
        super().close()


class _DeadlineSocket:
    """What HTTPResponse needs of a socket (makefile), over a _DeadlineReader."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock, self._deadline = sock, deadline

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(_DeadlineReader(self._sock, self._deadline))


class _DeadlineResponse(http.client.HTTPResponse):
    def __init__(self, sock: socket.socket, *args: Any, deadline: float, **kwargs: Any) -> None:
        super().__init__(_DeadlineSocket(sock, deadline), *args, **kwargs)


class _PinnedHTTP(http.client.HTTPConnection):
    """Connects to a vetted address, never re-resolving `host` (which is kept for the Host
    header, and for TLS in the subclass); every step waits only what is left of `deadline`."""

    def __init__(self, host: str, port: int, *, addresses: tuple[str, ...], deadline: float):
        super().__init__(host, port)
        self._addresses, self._deadline = addresses, deadline
        self.response_class = partial(_DeadlineResponse, deadline=deadline)

    def connect(self) -> None:
        error: OSError | None = None
        for address in self._addresses:
            try:
                timeout = _remaining(self._deadline)
                self.sock = socket.create_connection((address, self.port), timeout)
                return
            except TimeoutError:
                raise
            except OSError as exc:
                error = exc
        raise error or OSError("no address to connect to")


class _PinnedHTTPS(_PinnedHTTP):
    default_port = 443

    def connect(self) -> None:
        super().connect()
        # Certificate and name checks stay on, against the name in the URL. The handshake, a
        # single call, waits at most what is left.
        context = ssl.create_default_context()
        self.sock.settimeout(_remaining(self._deadline))
        self.sock = context.wrap_socket(self.sock, server_hostname=self.host)
