"""The fetch guard's two promises a slow or clever server tried to break: the whole fetch ends
at its deadline however slowly the server drips its answer, and an IPv6 address that carries a
non-public IPv4 one (6to4, Teredo, NAT64, IPv4-mapped or -compatible), or a site-local one, is
refused like that IPv4 address. Servers here listen on 127.0.0.1 only."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from gpuposture.base.fetch import FetchError, address_class, fetch


@contextmanager
def dripping_server(head: bytes, drip: bytes, interval: float) -> Iterator[str]:
    """Answers every connection with `head` at once, then `drip` one byte per `interval`
    (each byte arrives well inside any socket timeout), then closes."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)  # the request
                try:
                    conn.sendall(head)
                    for byte in drip:
                        if stop.wait(interval):
                            return
                        conn.sendall(bytes([byte]))
                except OSError:
                    continue  # the client gave up: what the test wants

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/feed.json"
    finally:
        stop.set()
        listener.close()
        thread.join(timeout=5)


@pytest.mark.parametrize(
    ("head", "drip"),
    [
        # Headers one byte at a time: the status line arrives, the rest never ends in time.
        (b"HTTP/1.1 200 OK\r\n", b"X-Padding: " + b"a" * 60 + b"\r\n\r\n"),
        # A body promised at 40 bytes, sent a byte at a time.
        (b"HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n", b"x" * 40),
        # A chunked body, the same.
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n28\r\n",
            b"x" * 40 + b"\r\n0\r\n\r\n",
        ),
    ],
    ids=["headers", "body", "chunked"],
)
def test_the_whole_fetch_ends_at_its_deadline_however_slow_the_drip(settings, head, drip):
    settings.GPUPOSTURE_FETCH_ALLOWED_HOSTS = ["127.0.0.1"]
    settings.GPUPOSTURE_FETCH_TIMEOUT_SECONDS = 1
    with dripping_server(head, drip, interval=0.2) as url:  # ~15 s of drip in all
        started = time.monotonic()
        with pytest.raises(FetchError) as refused:
            fetch(url)
        elapsed = time.monotonic() - started
    assert elapsed < 2.5, f"a 1 s fetch took {elapsed:.1f} s"
    assert "timed out: took longer than 1 s" in str(refused.value)


def test_a_prompt_answer_still_reads_whole(settings):
    settings.GPUPOSTURE_FETCH_ALLOWED_HOSTS = ["127.0.0.1"]
    settings.GPUPOSTURE_FETCH_TIMEOUT_SECONDS = 5
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\n"
    with dripping_server(head, b"abc", interval=0.01) as url:
        assert fetch(url) == b"abc"


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        # 6to4: 2002:AABB:CCDD::/48 carries AA.BB.CC.DD.
        ("2002:7f00:1::1", "loopback 127.0.0.1 in a 6to4"),
        ("2002:a00:1::1", "private 10.0.0.1 in a 6to4"),
        ("2002:a9fe:a9fe::1", "link-local 169.254.169.254 in a 6to4"),
        ("2002:c0a8:101::", "private 192.168.1.1 in a 6to4"),
        ("2002:808:808::1", None),  # 8.8.8.8: public, as its IPv4 form
        # Teredo: 2001:0::/32, the client's IPv4 is the last 32 bits XOR 0xffffffff.
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback 127.0.0.1 in a Teredo"),
        ("2001:0:4136:e378:8000:63bf:f5ff:fffe", "private 10.0.0.1 in a Teredo"),
        ("2001:0:4136:e378:8000:63bf:5601:5601", "link-local 169.254.169.254 in a Teredo"),
        # IPv4-mapped and the deprecated IPv4-compatible ::a.b.c.d.
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:8.8.8.8", None),
        ("::127.0.0.1", "loopback 127.0.0.1 in an IPv4-compatible"),
        ("::a9fe:a9fe", "link-local 169.254.169.254 in an IPv4-compatible"),
        # NAT64 (RFC 6052 well-known prefix): the gateway would connect to the IPv4 address.
        ("64:ff9b::7f00:1", "loopback 127.0.0.1 in a NAT64"),
        ("64:ff9b::a9fe:a9fe", "link-local 169.254.169.254 in a NAT64"),
        ("64:ff9b::c0a8:101", "private 192.168.1.1 in a NAT64"),
        ("64:ff9b::808:808", None),  # an IPv6-only network reaching 8.8.8.8
        # Site-local, deprecated but still routed by some networks as private.
        ("fec0::1", "site-local"),
        ("feff:ffff::1", "site-local"),
        # Unchanged: plain IPv6.
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("2606:4700:4700::1111", None),
    ],
)
def test_embedded_and_site_local_addresses(address, kind):
    assert address_class(address) == kind


def test_a_url_with_an_embedding_address_is_refused_naming_the_ipv4(settings):
    with pytest.raises(FetchError) as refused:
        fetch("https://[2002:a9fe:a9fe::1]/latest/meta-data")
    assert "(link-local 169.254.169.254 in a 6to4 address)" in str(refused.value)
