"""The checks every server of ours applies before a request reaches a route: who may call, from where, and how much.

Our servers (``serve-env``, ``serve-model``, ``serve-desktop``, ``serve-sandbox``, ``serve-retriever``) listen on
loopback by default, and a loopback port is reachable by more than the operator: by every local user, and by
every web page open in a browser on the machine (a game page in the env's own Chromium included). This module
holds what keeps those out (``docs/design/security.md`` is the threat model):

:class:`Exposure`
    The ``Host`` and ``Origin`` rules. A server bound to loopback answers only ``Host`` values that name
    loopback (``127.0.0.1``, ``localhost``, ``[::1]``), so a DNS-rebinding page (``evil.example`` resolving to
    127.0.0.1) is refused; a request that carries an ``Origin`` (every cross-site fetch, form post and
    WebSocket handshake a browser makes does) must come from the server's own origin or one the operator
    listed. Non-browser clients (curl, httpx, websockets, OpenEnv's client) send no ``Origin`` and pass.
:func:`check_content_type`
    JSON routes take JSON: a ``text/plain`` or form body, which a page may send cross-site without a CORS
    preflight, answers 415.
:func:`guarded_protocol`
    uvicorn's HTTP protocol with a connection limit (one more connection gets ``503`` and is closed, before it
    can take a file descriptor the server needs) and a header timeout (a connection that has not finished a
    request's headers in ``header_timeout_s`` is closed: slowloris holds nothing). :func:`raise_open_files_limit`
    lifts the soft ``RLIMIT_NOFILE`` so the limit is reached before the process runs out of descriptors.
:func:`check_token`
    A bearer token for a non-loopback address must be long enough to be unguessable.
:func:`fetch_public`
    A server-side fetch of a client-given URL (the desktop's ``/setup/download_file``): loopback, link-local,
    private and other special addresses are refused after DNS resolution, on every redirect, and the
    connection goes to the address that was checked (no second lookup a rebinding resolver could answer
    differently).

>>> guard = Exposure.for_bind("127.0.0.1")
>>> guard.host_allowed("127.0.0.1:8000"), guard.host_allowed("localhost"), guard.host_allowed("evil.example:8000")
(True, True, False)
>>> here = "127.0.0.1:8000"
>>> guard.origin_allowed("http://127.0.0.1:8000", here), guard.origin_allowed("http://evil.example", here)
(True, False)
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import ipaddress
import socket
import ssl
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from agentrl.core.errors import AgentRLError

__all__ = [
    "DEFAULT_HEADER_TIMEOUT_S",
    "DEFAULT_MAX_CONNECTIONS",
    "MIN_TOKEN_CHARS",
    "Exposure",
    "FetchRefused",
    "check_content_type",
    "check_token",
    "fetch_public",
    "guarded_protocol",
    "is_public_address",
    "raise_open_files_limit",
]

DEFAULT_MAX_CONNECTIONS = 1024
"""Open connections (HTTP and WebSocket) a server holds at once; one more answers 503 and is closed."""
DEFAULT_HEADER_TIMEOUT_S = 10.0
"""Seconds a connection has to finish a request's headers (from its start, or from the last response)."""
MIN_TOKEN_CHARS = 16
"""The shortest bearer token a server accepts on a non-loopback address (``secrets.token_urlsafe(24)`` has 32)."""
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
"""``Host`` values that name this machine's loopback interface (ports aside)."""
JSON_TYPES = ("application/json",)
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def _host_only(value: str) -> str:
    """``value`` (a ``Host`` header or an origin's netloc) without its port, lowercased.

    >>> _host_only("LocalHost:8000"), _host_only("[::1]:80"), _host_only("127.0.0.1")
    ('localhost', '[::1]', '127.0.0.1')
    """
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[: end + 1] if end >= 0 else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


@dataclass(frozen=True)
class Exposure:
    """Which ``Host`` and ``Origin`` values a server answers.

    Attributes:
        hosts: the allowed ``Host`` names (ports aside); ``None``: any (a server on a wildcard or non-loopback
            address, where a token guards every route).
        origins: origins allowed besides the server's own (``scheme://host:port``, exactly as browsers send).
    """

    hosts: frozenset[str] | None
    origins: frozenset[str] = frozenset()

    @classmethod
    def for_bind(
        cls, host: str | None, *, unix_socket: str | None = None, allowed_hosts: Iterable[str] = (),
        allowed_origins: Iterable[str] = (),
    ) -> Exposure:
        """The rules of a server bound to ``host`` (or to ``unix_socket``).

        Loopback: the loopback names, plus ``allowed_hosts``. A unix socket or a non-loopback address: any
        ``Host`` unless ``allowed_hosts`` names some (a browser cannot reach a unix socket, and off loopback a
        token is required). ``Origin`` is checked in every case.

        >>> Exposure.for_bind("0.0.0.0").hosts is None, sorted(Exposure.for_bind("::1").hosts)[:2]
        (True, ['127.0.0.1', '::1'])
        """
        extra = frozenset(_host_only(h) for h in allowed_hosts)
        origins = frozenset(o.rstrip("/").lower() for o in allowed_origins)
        if unix_socket is None and host is not None and _is_loopback_host(host):
            return cls(LOOPBACK_NAMES | extra, origins)
        return cls(extra or None, origins)

    def host_allowed(self, host_header: str | None) -> bool:
        """Whether a request with this ``Host`` header is answered (a missing header passes only without a list)."""
        if self.hosts is None:
            return True
        return bool(host_header) and _host_only(str(host_header)) in self.hosts

    def origin_allowed(self, origin: str | None, host_header: str | None) -> bool:
        """Whether a request with this ``Origin`` is answered: none, the server's own origin, or a listed one.

        The server's own origin is the one whose ``host:port`` equals the request's ``Host`` (already checked
        by :meth:`host_allowed`); ``null`` (a sandboxed frame, a ``file:`` page) is never allowed.
        """
        if origin is None:
            return True
        origin = origin.strip().lower().rstrip("/")
        if origin in self.origins:
            return True
        parsed = urllib.parse.urlsplit(origin)
        if parsed.scheme not in ("http", "https", "ws", "wss") or not parsed.netloc or not host_header:
            return False
        return parsed.netloc == str(host_header).strip().lower()

    def check(self, headers: Iterable[tuple[bytes, bytes]]) -> str | None:
        """Why a request with these (ASGI) headers is refused, or ``None`` when it may go on."""
        host = origin = None
        for key, value in headers:
            if key == b"host":
                host = value.decode("latin-1")
            elif key == b"origin":
                origin = value.decode("latin-1")
        if not self.host_allowed(host):
            return (
                f"Host {host!r} is not one this server answers (a loopback server answers 127.0.0.1, localhost and "
                "[::1]; a name that resolves here is a DNS-rebinding attempt); start it with --allowed-host NAME "
                "to answer another name"
            )
        if not self.origin_allowed(origin, host):
            return (
                f"requests from the web origin {origin!r} are refused (a page in a browser may not drive this "
                "server); start it with --allowed-origin ORIGIN to allow one"
            )
        return None


def _is_loopback_host(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_content_type(content_type: str | None, accepts: str) -> str | None:
    """Why a body of ``content_type`` is refused on a route that ``accepts`` ``"json"``, ``"form"`` or ``"any"``.

    ``"json"`` routes take ``application/json`` (and ``application/*+json``) or no type at all; ``"form"`` routes
    take those and urlencoded and multipart forms (OSWorld's clients send forms to some routes). A
    ``text/plain`` body is what a page can post cross-site without a preflight, so it is never taken as JSON.

    >>> check_content_type("application/json; charset=utf-8", "json") is None
    True
    >>> check_content_type("text/plain", "json")
    "this route takes a JSON body: send Content-Type: application/json (got 'text/plain')"
    >>> check_content_type("application/x-www-form-urlencoded", "form") is None
    True
    """
    if accepts == "any" or not content_type:
        return None
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind in JSON_TYPES or (kind.startswith("application/") and kind.endswith("+json")):
        return None
    if accepts == "form" and kind in FORM_TYPES:
        return None
    wanted = "a JSON body" if accepts == "json" else "a JSON body or a form"
    return f"this route takes {wanted}: send Content-Type: application/json (got {kind!r})"


def check_token(token: str | None, host: str | None, *, server: str = "server") -> None:
    """Raise ``ValueError`` for a token too short to guard a non-loopback address.

    >>> check_token("x", "127.0.0.1")
    >>> check_token("x", "0.0.0.0")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: a token of 1 character(s) is too short for a server on '0.0.0.0' (the network can guess it): ...
    """
    if token is None or host is None or _is_loopback_host(host):
        return
    if len(token) < MIN_TOKEN_CHARS:
        raise ValueError(
            f"a token of {len(token)} character(s) is too short for a {server} on {host!r} (the network can guess "
            f"it): use at least {MIN_TOKEN_CHARS}, e.g. python -c 'import secrets; print(secrets.token_urlsafe(24))'"
        )


# -- connections ----------------------------------------------------------------------------------------
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nconnection: close\r\n"
    b"content-length: 57\r\n\r\n"
    b'{"error": "too many connections to this server; retry"}\n'
)
_LATE = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
    b"content-length: 49\r\n\r\n"
    b'{"error": "the request headers came too slowly"}\n'
)


def guarded_protocol(base: type, *, max_connections: int, header_timeout_s: float) -> type:
    """A subclass of uvicorn's HTTP protocol ``base`` with a connection limit and a header timeout.

    Args:
        base: uvicorn's protocol class (``H11Protocol`` or ``HttpToolsProtocol``).
        max_connections: connections held at once (WebSockets included: they stay in the same set); one more
            is answered 503 and closed at once.
        header_timeout_s: a connection whose next request's headers are not complete this long after it opened
            (or after its last response) is answered 408 and closed. uvicorn's own keep-alive timeout is
            cancelled by any byte that arrives, so a client sending one byte at a time held a connection forever.
    """
    if max_connections < 1:
        raise ValueError(f"max_connections must be >= 1, got {max_connections}")
    if header_timeout_s <= 0:
        raise ValueError(f"header_timeout_s must be > 0, got {header_timeout_s}")

    class GuardedProtocol(base):  # type: ignore[misc, valid-type]
        _agentrl_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            over = len(self.connections) >= max_connections
            super().connection_made(transport)
            if over:
                with contextlib.suppress(Exception):
                    transport.write(_BUSY)
                transport.close()
                return
            self._agentrl_arm()

        def _agentrl_arm(self) -> None:
            self._agentrl_cancel()
            self._agentrl_timer = self.loop.call_later(header_timeout_s, self._agentrl_late, self.cycle)

        def _agentrl_cancel(self) -> None:
            if self._agentrl_timer is not None:
                self._agentrl_timer.cancel()
                self._agentrl_timer = None

        def _agentrl_late(self, cycle: Any) -> None:
            self._agentrl_timer = None
            transport = self.transport
            if transport is None or transport.is_closing() or transport.get_protocol() is not self:
                return  # closed already, or upgraded to a WebSocket (whose protocol has its own pings)
            if self.cycle is cycle:  # no request's headers have arrived since the timer started
                with contextlib.suppress(Exception):
                    transport.write(_LATE)
                transport.close()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self.transport is not None and not self.transport.is_closing():
                self._agentrl_arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._agentrl_cancel()
            super().connection_lost(exc)

    GuardedProtocol.__name__ = GuardedProtocol.__qualname__ = f"Guarded{base.__name__}"
    return GuardedProtocol


def raise_open_files_limit(wanted: int) -> int:
    """Lift the soft ``RLIMIT_NOFILE`` to ``wanted`` (never above the hard limit, never lower); the new soft limit.

    A server whose connection limit is above its descriptor limit fails ``accept()`` instead, and asyncio logs
    each failure with a traceback (hundreds of MB a minute under a flood).
    """
    try:
        import resource
    except ImportError:  # pragma: no cover (not POSIX)
        return wanted
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            return target
    return soft


# -- server-side fetches --------------------------------------------------------------------------------
class FetchRefused(AgentRLError, ValueError):
    """A URL the server will not fetch: its address is not public, its scheme is not http(s), or it is too big."""


def is_public_address(address: str) -> bool:
    """Whether ``address`` (an IP) is a public unicast address: not loopback, private, link-local or reserved.

    IPv4 inside IPv6 (``::ffff:127.0.0.1``, 6to4, Teredo, NAT64's well-known prefix) is judged by the IPv4 inside.

    >>> addresses = ("93.184.216.34", "127.0.0.1", "10.1.2.3", "169.254.169.254", "::ffff:127.0.0.1", "0.0.0.0")
    >>> [is_public_address(a) for a in addresses]
    [True, False, False, False, False, False]
    """
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        inner = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if inner is None and ip in ipaddress.ip_network("64:ff9b::/96"):
            inner = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if inner is not None:
            return is_public_address(str(inner))
    return ip.is_global and not (ip.is_multicast or ip.is_reserved or ip.is_unspecified or ip.is_loopback)


def _resolve(host: str, port: int, allow_private: bool) -> tuple[int, str]:
    """The (family, address) to connect to for ``host``: every address DNS gives must be public."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise OSError(f"cannot resolve {host!r}: {exc}") from None
    if not infos:
        raise OSError(f"{host!r} resolves to no address")
    if not allow_private:
        for _family, _type, _proto, _name, sockaddr in infos:
            if not is_public_address(str(sockaddr[0])):
                raise FetchRefused(
                    f"{host!r} resolves to {sockaddr[0]}, which is not a public address (loopback, private, "
                    "link-local or reserved): the server does not fetch from its own network; start it with "
                    "--allow-private-fetch to allow that"
                )
    family, _type, _proto, _name, sockaddr = infos[0]
    return family, str(sockaddr[0])


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """An HTTP connection to an address already checked (the ``Host`` header still names the URL's host)."""

    def __init__(self, host: str, port: int, address: str, family: int, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address, self._family = address, family

    def connect(self) -> None:
        """Connect to the checked address."""
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """:class:`_PinnedHTTPConnection` with TLS; the certificate is checked against the URL's host name."""

    def __init__(self, host: str, port: int, address: str, family: int, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self._address, self._family = address, family

    def connect(self) -> None:
        """Connect to the checked address and start TLS for the URL's host."""
        raw = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(raw, server_hostname=self.host)  # type: ignore[attr-defined]


def fetch_public(
    url: str, cap: int, timeout_s: float, *, allow_private: bool = False, max_redirects: int = 5
) -> bytes:
    """The body at ``url`` (http or https), refusing addresses that are not public unless ``allow_private``.

    Each hop (the URL and every redirect's ``Location``) is resolved, every address checked with
    :func:`is_public_address`, and the connection made to the checked address.

    Raises:
        FetchRefused: a scheme other than http(s), an address that is not public, a body over ``cap`` bytes,
            or too many redirects.
        OSError: the host cannot be resolved or reached, or it answers an error status.
    """
    for _hop in range(max_redirects + 1):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise FetchRefused(f"only http:// and https:// URLs with a host are fetched, got {url!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        family, address = _resolve(parts.hostname, port, allow_private)
        kind = _PinnedHTTPSConnection if parts.scheme == "https" else _PinnedHTTPConnection
        connection = kind(parts.hostname, port, address, family, timeout_s)
        try:
            target = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
            connection.request("GET", target, headers={"User-Agent": "agentrl-desktop", "Accept": "*/*"})
            response = connection.getresponse()
            if response.status in (301, 302, 303, 307, 308):
                location = response.getheader("Location")
                if not location:
                    raise OSError(f"{url} answered {response.status} without a Location")
                url = urllib.parse.urljoin(url, location)
                continue
            if response.status >= 400:
                raise OSError(f"{url} answered HTTP {response.status}")
            length = response.getheader("Content-Length")
            if length is not None and length.isdigit() and int(length) > cap:
                raise FetchRefused(f"{url} is {length} bytes, over the limit of {cap}")
            data = response.read(cap + 1)
            if len(data) > cap:
                raise FetchRefused(f"{url} is over the limit of {cap} bytes")
            return data
        finally:
            connection.close()
    raise FetchRefused(f"{url}: more than {max_redirects} redirects")
