"""Our HTTP servers' one stack: ASGI apps (Starlette, or FastAPI on top of it) served by uvicorn in a thread.

Shared by the four servers: the model server (``agentrl serve-model``, FastAPI), the retrieval server
(``agentrl serve-retriever``, FastAPI), the desktop server (``agentrl serve-desktop``) and the sandbox
server (``agentrl serve-sandbox``). Each binds 127.0.0.1 unless told otherwise (or listens on a unix
socket), starts in a daemon thread for tests, envs and benchmarks, and returns a :class:`ServerHandle`
(``url``/``base_url``, ``port``, ``close()``, ``with``).

:func:`make_app` builds the app of a server whose routes take free-form JSON, forms or bytes (the
desktop and sandbox servers): a Starlette app (FastAPI is a Starlette app plus pydantic validation,
which these routes do not use; the desktop image copies only pure-Python packages, and pydantic's core
is compiled) with :class:`ServingMiddleware` in front: the request-size limit (413), the bearer-token
check (before routing, so unknown routes are guarded too), errors as the server's JSON shape, one log
line per request (``METHOD /path STATUS 0.123s``) and trailing slashes ignored.

Nothing here imports starlette or uvicorn until a server is built: modules that only hold a client
(``DesktopClient``) import this one without them.
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import json
import logging
import math
import os
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from agentrl.core.errors import AgentRLError
from agentrl.serving.guard import (
    DEFAULT_HEADER_TIMEOUT_S,
    DEFAULT_MAX_CONNECTIONS,
    Exposure,
    check_content_type,
    guarded_protocol,
    raise_open_files_limit,
)

__all__ = [
    "HTTPStatusError",
    "GuardMiddleware",
    "ServerHandle",
    "ServingMiddleware",
    "UnixHTTPConnection",
    "add_guard_arguments",
    "bind_socket",
    "check_bearer",
    "decode_body",
    "guard_options",
    "is_loopback",
    "json_response",
    "make_app",
    "parse_multipart",
    "read_token",
    "refuse_remote",
    "start_server_thread",
]

T = TypeVar("T")
_DRAIN_LIMIT = 64 * 1024 * 1024
"""An oversized request up to this size is read (and dropped) so that its client gets the 413, not a reset."""
DEFAULT_BODY_TIMEOUT_S = 60.0
"""Seconds a request has, from its headers, to send its whole body (a body sent a byte a minute holds nothing)."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost``.

    >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("0.0.0.0"), is_loopback("localhost")
    (True, True, False, True)
    """
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def refuse_remote(host: str, allow_remote: bool, server: str = "server") -> None:
    """Raise ``ValueError`` for a non-loopback ``host`` unless ``allow_remote``: our servers have no authentication.

    The message names both fixes (``allow_remote=True`` in Python, ``--allow-remote`` on the command line).

    >>> refuse_remote("127.0.0.1", allow_remote=False)
    >>> refuse_remote("0.0.0.0", allow_remote=True)
    """
    if not allow_remote and not is_loopback(host):
        raise ValueError(
            f"refusing to listen on non-loopback host {host!r}: the {server} has no authentication, so it "
            "binds to loopback only; pass allow_remote=True (--allow-remote) to expose it anyway"
        )


class HTTPStatusError(AgentRLError):
    """An error a server answers with: ``status`` and the ``message`` to send (in the server's error shape)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


# -- requests ---------------------------------------------------------------------------------
def check_bearer(header: str | None, tokens: Mapping[str, T]) -> T:
    """The value of the token that ``header`` (an ``Authorization`` value) carries; else 401.

    Every token is compared in constant time.

    >>> check_bearer("Bearer s3cret", {"s3cret": "alice"})
    'alice'
    >>> check_bearer(None, {"s3cret": "alice"})
    Traceback (most recent call last):
    ...
    agentrl.serving.stack.HTTPStatusError: missing token: send 'Authorization: Bearer <token>'
    """
    import hmac

    if not header or not header.startswith("Bearer "):
        raise HTTPStatusError(401, "missing token: send 'Authorization: Bearer <token>'")
    given = header[len("Bearer ") :].strip().encode()
    found: Any = None
    matched = False
    for token, value in tokens.items():
        if hmac.compare_digest(given, token.encode()):
            found, matched = value, True
    if not matched:
        raise HTTPStatusError(401, "wrong token")
    return found


def _header_params(value: str) -> tuple[str, dict[str, str]]:
    """``("multipart/form-data", {"boundary": ...})`` from a header value (quoted and RFC 2231 forms too)."""
    from email.message import Message
    from email.utils import collapse_rfc2231_value

    msg = Message()
    msg["content-type"] = value
    params = msg.get_params() or []
    out = {key.lower(): collapse_rfc2231_value(val) for key, val in params[1:]}
    return params[0][0].lower() if params else "", out


def parse_multipart(body: bytes, content_type: str) -> dict[str, str | bytes]:
    r"""The fields of a ``multipart/form-data`` body: text fields as ``str``, file parts (with a filename) as ``bytes``.

    A field sent twice keeps its last value. Raises :class:`HTTPStatusError` (400) for a body without
    its boundary or its closing delimiter.

    >>> body = (b'--XyZ\r\nContent-Disposition: form-data; name="file_path"\r\n\r\n~/a.txt\r\n'
    ...         b'--XyZ\r\nContent-Disposition: form-data; name="file_data"; filename="a.txt"\r\n'
    ...         b'Content-Type: application/octet-stream\r\n\r\nhi\r\n\x00\r\n--XyZ--\r\n')
    >>> parse_multipart(body, "multipart/form-data; boundary=XyZ")
    {'file_path': '~/a.txt', 'file_data': b'hi\r\n\x00'}
    """
    _, params = _header_params(content_type)
    boundary = params.get("boundary")
    if not boundary:
        raise HTTPStatusError(400, "a multipart body needs a boundary in its Content-Type")
    delimiter = b"\r\n--" + boundary.encode("latin-1")
    chunks = (b"\r\n" + body).split(delimiter)
    if len(chunks) < 2:
        raise HTTPStatusError(400, "the multipart body has no part")
    fields: dict[str, str | bytes] = {}
    for chunk in chunks[1:]:
        if chunk.startswith(b"--"):
            return fields
        head, sep, content = chunk.partition(b"\r\n\r\n")
        if not sep:
            raise HTTPStatusError(400, "a multipart part has no blank line after its headers")
        headers: dict[str, str] = {}
        for line in head.split(b"\r\n")[1:]:  # the first line is the rest of the delimiter's line
            name, colon, value = line.decode("utf-8", "replace").partition(":")
            if colon:
                headers[name.strip().lower()] = value.strip()
        kind, disposition = _header_params(headers.get("content-disposition", ""))
        field_name = disposition.get("name")
        if kind != "form-data" or field_name is None:
            continue
        if "filename" in disposition or "filename*" in disposition:
            fields[field_name] = content
        else:
            charset = _header_params(headers.get("content-type", "text/plain"))[1].get("charset", "utf-8")
            try:
                fields[field_name] = content.decode(charset, "replace")
            except LookupError:
                fields[field_name] = content.decode("utf-8", "replace")
    raise HTTPStatusError(400, "the multipart body ends before its closing delimiter")


def decode_body(raw: bytes, content_type: str | None = None, *, forms: bool = False) -> dict[str, Any]:
    """A request body as a dict: a JSON object, or (with ``forms``) an urlencoded or multipart form.

    An empty body is ``{}``. Raises :class:`HTTPStatusError` (400) for anything else.

    >>> decode_body(b'{"a": 1}'), decode_body(b"a=1&b=2", "application/x-www-form-urlencoded", forms=True)
    ({'a': 1}, {'a': '1', 'b': '2'})
    """
    if not raw:
        return {}
    ctype = (content_type or "").lower()
    if forms and ctype.startswith("application/x-www-form-urlencoded"):
        return {k: v[-1] for k, v in urllib.parse.parse_qs(raw.decode(errors="replace")).items()}
    if forms and ctype.startswith("multipart/form-data"):
        return parse_multipart(raw, content_type or "")
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise HTTPStatusError(400, "the body is not JSON") from None
    if not isinstance(body, dict):
        raise HTTPStatusError(400, "the body must be a JSON object")
    return body


def json_response(payload: Any, status: int = 200) -> Any:
    """A Starlette response of ``json.dumps(payload)`` (``application/json``), without a pydantic round trip."""
    from starlette.responses import Response

    return Response(json.dumps(payload).encode(), status, media_type="application/json")


# -- the ASGI layer ---------------------------------------------------------------------------
ErrorBody = Callable[[int, str], Any]
DirectHandler = Callable[[dict[str, Any], bytes], tuple[int, str, bytes, Sequence[tuple[str, str]]]]


def _default_error_body(status: int, message: str) -> dict[str, Any]:
    return {"error": message}


class ServingMiddleware:
    """The pure-ASGI layer in front of :func:`make_app`'s apps (see the module docstring).

    Args:
        app: the ASGI app behind it.
        error_body: ``(status, message) -> JSON payload`` of the server's errors.
        authenticate: ``(Authorization header or None, path) -> client``; raises
            :class:`HTTPStatusError` (401/403). The client lands in ``request.state.client``.
        logger: each request is logged there at INFO: ``METHOD /path STATUS 0.123s``.
        max_request_bytes: bodies above this answer 413 (read and dropped first, up to 64 MiB, and
            the connection is then closed).
        internal_prefix: put before ``Type: message`` of an unexpected exception (answered 500).
        direct: ``{(method, path): handler}`` served here, before the app's router: the hot routes.
            A handler is a plain function ``(scope, body bytes) -> (status, content type, body bytes,
            extra headers)`` run in the thread pool; no ``Request`` object, no routing table.
        inline: ``scope -> bool``: whether a ``direct`` call runs on the event loop itself; for
            short calls (a few milliseconds at most), where the two thread switches of the pool
            would cost more than the call on a loaded machine.
        body_types: ``{path: "json" | "form" | "any"}``: what a route's body may be
            (:func:`~agentrl.serving.guard.check_content_type`); a path not listed takes ``default_body``.
            Another content type answers 415 before the route runs.
        default_body: the body type of unlisted paths (``"json"``: a ``text/plain`` or form post, which a web
            page may send cross-site without a preflight, is refused).
    """

    def __init__(
        self,
        app: Any,
        *,
        error_body: ErrorBody = _default_error_body,
        authenticate: Callable[[str | None, str], Any] | None = None,
        logger: logging.Logger | None = None,
        max_request_bytes: int | None = None,
        internal_prefix: str = "",
        direct: Mapping[tuple[str, str], DirectHandler] | None = None,
        inline: Callable[[dict[str, Any]], bool] | None = None,
        body_types: Mapping[str, str] | None = None,
        default_body: str = "json",
    ) -> None:
        self.app = app
        self.body_types = dict(body_types or {})
        self.default_body = default_body
        self.direct = dict(direct or {})
        self.inline = inline
        self.error_body = error_body
        self.authenticate = authenticate
        self.logger = logger
        self.max_request_bytes = max_request_bytes
        self.internal_prefix = internal_prefix

    async def _send_error(self, send: Any, status: int, message: str, close: bool = False) -> None:
        body = json.dumps(self.error_body(status, message)).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        if close:
            headers.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _limit(self, scope: dict[str, Any], receive: Any) -> Any:
        """``receive``, counting the body when its length is not announced; 413 for an announced oversize."""
        limit = self.max_request_bytes
        if limit is None:
            return receive
        length = None
        for key, value in scope["headers"]:
            if key == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    raise HTTPStatusError(400, "bad Content-Length") from None
        if length is not None:
            if length > limit:
                left = length if length <= _DRAIN_LIMIT else 0
                while left > 0:  # read what was sent, so that the client reads the 413 instead of a reset
                    message = await receive()
                    left -= len(message.get("body", b""))
                    if message["type"] != "http.request" or not message.get("more_body", False):
                        break
                raise HTTPStatusError(413, f"request of {length} bytes is over the limit of {limit}")
            return receive
        seen = 0

        async def counting() -> Any:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > limit:
                raise HTTPStatusError(413, f"request of more than {limit} bytes is over the limit of {limit}")
            return message

        return counting

    async def _direct(self, handler: DirectHandler, scope: dict[str, Any], receive: Any, send: Any) -> None:
        import anyio.to_thread


        chunks = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        raw = b"".join(chunks)
        if self.inline is not None and self.inline(scope):
            status, content_type, body, extra = handler(scope, raw)
        else:
            status, content_type, body, extra = await anyio.to_thread.run_sync(handler, scope, raw)
        headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
        headers += [(k.encode(), v.encode()) for k, v in extra]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Serve one ASGI call."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        path = scope["path"]
        if len(path) > 1 and path.endswith("/"):
            path = path.rstrip("/") or "/"
            scope["path"] = path
        status = 0

        async def tracking_send(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            receive = await self._limit(scope, receive)
            content_type = _header(scope, b"content-type")
            refused = check_content_type(content_type, self.body_types.get(path, self.default_body))
            if refused is not None:
                raise HTTPStatusError(415, refused)
            if self.authenticate is not None:
                header = None
                for key, value in scope["headers"]:
                    if key == b"authorization":
                        header = value.decode("latin-1")
                scope.setdefault("state", {})["client"] = self.authenticate(header, path)
            handler = self.direct.get((scope["method"], path)) if self.direct else None
            if handler is None:
                await self.app(scope, receive, tracking_send)
            else:
                await self._direct(handler, scope, receive, tracking_send)
        except HTTPStatusError as exc:
            if status:
                raise
            await self._send_error(tracking_send, exc.status, exc.message, close=exc.status == 413)
        except Exception as exc:  # a bug of ours, or the resource closed under us: say so, keep serving
            if status:
                raise
            if self.logger is not None:
                self.logger.debug("%s %s failed", scope["method"], path, exc_info=True)
            await self._send_error(tracking_send, 500, f"{self.internal_prefix}{type(exc).__name__}: {exc}")
        finally:
            if self.logger is not None and self.logger.isEnabledFor(logging.INFO):
                self.logger.info("%s %s %d %.3fs", scope["method"], path, status, time.perf_counter() - start)


def make_app(
    routes: Sequence[tuple[str, str | Sequence[str], Callable[..., Any]]],
    *,
    error_body: ErrorBody = _default_error_body,
    authenticate: Callable[[str | None, str], Any] | None = None,
    logger: logging.Logger | None = None,
    max_request_bytes: int | None = None,
    internal_prefix: str = "",
    wrong_method_status: int = 405,
    max_threads: int = 256,
    direct: Mapping[tuple[str, str], DirectHandler] | None = None,
    inline: Callable[[dict[str, Any]], bool] | None = None,
    websocket_routes: Sequence[tuple[str, Callable[..., Any]]] = (),
    body_types: Mapping[str, str] | None = None,
    default_body: str = "json",
) -> Any:
    """A Starlette app of ``routes`` with :class:`ServingMiddleware` in front.

    Args:
        routes: ``(path, method or methods, endpoint)``; an endpoint takes the Starlette ``Request``
            and returns a response; a plain ``def`` runs in the thread pool, an ``async def`` on the
            event loop (it must hand blocking work to ``starlette.concurrency.run_in_threadpool``).
        error_body: ``(status, message) -> JSON payload`` of the server's errors.
        authenticate: ``(Authorization header or None, path) -> client`` (see :class:`ServingMiddleware`).
        logger: where each request is logged at INFO.
        max_request_bytes: bodies above this answer 413.
        internal_prefix: put before ``Type: message`` of an unexpected exception (answered 500).
        wrong_method_status: the status of a known path with another method (404 answers "no route").
        max_threads: the size of the thread pool for blocking endpoints (anyio's default is 40).
        direct: hot routes served without the router (see :class:`ServingMiddleware`).
        inline: the ``direct`` routes run on the event loop (see :class:`ServingMiddleware`).
        websocket_routes: ``(path, endpoint)``; an endpoint takes the Starlette ``WebSocket`` (the middleware
            passes them through: they authenticate themselves).
        body_types: ``{path: "json" | "form" | "any"}``, what a route's body may be (see :class:`ServingMiddleware`).
        default_body: the body type of the routes ``body_types`` does not list.

    Raises:
        DependencyNotInstalled: starlette is missing.
    """
    try:
        from starlette.applications import Starlette
        from starlette.exceptions import HTTPException
        from starlette.middleware import Middleware
        from starlette.routing import Route, WebSocketRoute
    except ImportError as exc:
        from agentrl.core.errors import DependencyNotInstalled

        raise DependencyNotInstalled("starlette and uvicorn", extra="serve") from exc

    async def http_error(request: Any, exc: Any) -> Any:
        method, path = request.method, request.url.path
        status = exc.status_code
        if status == 405:
            status = wrong_method_status
            message = f"{method} is not allowed on {path}" if status == 405 else f"no route {method} {path}"
        elif status == 404:
            message = f"no route {method} {path}"
        else:
            message = str(exc.detail)
        return json_response(error_body(status, message), status)

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> Any:
        import anyio.to_thread

        anyio.to_thread.current_default_thread_limiter().total_tokens = max_threads
        yield

    table: list[Any] = [
        Route(path, endpoint, methods=[methods] if isinstance(methods, str) else list(methods))
        for path, methods, endpoint in routes
    ]
    table += [WebSocketRoute(path, endpoint) for path, endpoint in websocket_routes]
    middleware = Middleware(
        ServingMiddleware,
        error_body=error_body,
        authenticate=authenticate,
        logger=logger,
        max_request_bytes=max_request_bytes,
        internal_prefix=internal_prefix,
        direct=direct,
        inline=inline,
        body_types=body_types,
        default_body=default_body,
    )
    return Starlette(
        routes=table, middleware=[middleware], exception_handlers={HTTPException: http_error}, lifespan=lifespan
    )


def _header(scope: Mapping[str, Any], name: bytes) -> str | None:
    """The value of header ``name`` (lowercase bytes) in an ASGI scope, or ``None``."""
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


class GuardMiddleware:
    """The outermost ASGI layer of every server :func:`start_server_thread` starts: ``Host``, ``Origin``, body deadline.

    A request (or WebSocket handshake) whose ``Host`` or ``Origin`` the server's
    :class:`~agentrl.serving.guard.Exposure` refuses answers 403 before any route, token check or body read;
    a handshake is refused with 403 too. A request body must arrive whole within ``body_timeout_s`` of the
    headers (each ``receive`` waits at most until then; 408 after). Everything else passes through unchanged.
    """

    def __init__(
        self,
        app: Any,
        exposure: Exposure,
        *,
        body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S,
        error_body: ErrorBody = _default_error_body,
        logger: logging.Logger | None = None,
    ) -> None:
        self.app = app
        self.exposure = exposure
        self.body_timeout_s = float(body_timeout_s)
        self.error_body = error_body
        self.logger = logger or logging.getLogger("agentrl.serving")

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Check one ASGI call, then hand it on."""
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        refused = self.exposure.check(scope.get("headers", ()))
        if refused is not None:
            self.logger.warning("refused %s %s: %s", scope.get("method", "WS"), scope.get("path"), refused)
            if kind == "websocket":
                await send({"type": "websocket.close", "code": 1008, "reason": refused[:120]})
                return
            body = json.dumps(self.error_body(403, refused)).encode()
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": 403, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        if kind == "http":
            receive = self._deadline(receive)
        await self.app(scope, receive, send)

    def _deadline(self, receive: Any) -> Any:
        """``receive`` that waits at most until the body's deadline, until the body is whole; then plain ``receive``."""
        import asyncio

        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.body_timeout_s
        whole = False

        async def bounded() -> Any:
            nonlocal whole
            if whole:
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
            except asyncio.TimeoutError:
                raise HTTPStatusError(
                    408, f"the request body did not arrive within {self.body_timeout_s:g}s of its headers"
                ) from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                whole = True
            return message

        return bounded


# -- uvicorn in a thread ----------------------------------------------------------------------
class UnixHTTPConnection(http.client.HTTPConnection):
    """An HTTP connection over a unix socket (``unix:PATH`` base URLs: a server inside a container without a network).

    >>> UnixHTTPConnection("/run/agentrl/desktop.sock").socket_path
    '/run/agentrl/desktop.sock'
    """

    def __init__(self, socket_path: str, timeout: Any = None) -> None:
        super().__init__("localhost", timeout=timeout)
        self.socket_path = socket_path

    def connect(self) -> None:
        """Connect to :attr:`socket_path` (the host name is only sent in the ``Host`` header)."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if isinstance(self.timeout, (int, float)):
            sock.settimeout(self.timeout)
        sock.connect(self.socket_path)
        self.sock = sock


def bind_socket(
    host: str = "127.0.0.1", port: int = 0, *, unix_socket: str | None = None, socket_mode: int = 0o600
) -> socket.socket:
    """A listening socket: TCP on ``host:port`` (IPv4 or IPv6 from the host's form), or a unix socket.

    A unix socket's old file is removed first, and the new one gets ``socket_mode``: ``0o600`` (its owner only)
    by default, for a server without a token; a server with one passes ``0o666`` and lets the folder it is in
    decide who may reach it (a container bind-mounts that folder). Raises ``OSError`` (the port is taken, for
    instance).
    """
    if unix_socket is not None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(unix_socket)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(unix_socket)
            os.chmod(unix_socket, socket_mode)
        except BaseException:
            sock.close()
            raise
    else:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP, and
        # without it a response written in two parts (head, body) waits ~40 ms for a delayed ACK.
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
        except BaseException:
            sock.close()
            raise
    sock.listen(2048)
    sock.setblocking(False)
    return sock


class ServerHandle:
    """A uvicorn server serving in a daemon thread.

    ``url`` (``http://HOST:PORT``, or ``unix:PATH``), ``base_url`` (the URL to give a client; the same
    here), ``port``, ``thread``, ``server`` (the ``uvicorn.Server``) and ``app`` (the object the
    server serves, e.g. a ``SandboxServer``, for tests and health checks). ``close()`` (idempotent;
    also ``stop()`` and ``with``) runs ``before_close`` (release what the app holds, so that requests
    in flight end), asks uvicorn to exit (it hangs up kept-alive connections and waits up to a few
    seconds for requests in flight), and joins the thread.
    """

    def __init__(
        self,
        server: Any,
        thread: threading.Thread,
        url: str,
        *,
        app: Any = None,
        before_close: Callable[[], None] | None = None,
    ) -> None:
        self.server = server
        self.thread = thread
        self.url = url
        self.app = app
        self._before_close = before_close
        self._closed = False

    @property
    def base_url(self) -> str:
        """The URL to give a client."""
        return self.url

    @property
    def port(self) -> int:
        """The bound TCP port."""
        return int(self.url.rsplit(":", 1)[1])

    def close(self, timeout_s: float = 10.0) -> None:
        """Stop the server and wait for its thread; idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._before_close is not None:
                self._before_close()
        finally:
            self.server.should_exit = True
            self.thread.join(timeout_s)
            if self.thread.is_alive():
                self.server.force_exit = True
                self.thread.join(2.0)

    def stop(self, timeout_s: float = 10.0) -> None:
        """The same as :meth:`close`."""
        self.close(timeout_s)

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def start_server_thread(
    app: Any,
    host: str = "127.0.0.1",
    port: int = 0,
    timeout_s: float = 10.0,
    *,
    name: str = "agentrl-server",
    unix_socket: str | None = None,
    service: Any = None,
    before_close: Callable[[], None] | None = None,
    graceful_s: float = 5.0,
    handle_class: type[ServerHandle] = ServerHandle,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S,
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S,
    socket_mode: int = 0o600,
    ws_max_bytes: int = 16 * 1024 * 1024,
    error_body: ErrorBody = _default_error_body,
    **handle_options: Any,
) -> Any:
    """Serve the ASGI ``app`` with uvicorn in a daemon thread; return a :class:`ServerHandle` once it answers.

    The socket is bound here, in the caller's thread (``port=0`` picks a free port; a taken port
    raises ``OSError`` at once); ``unix_socket`` listens on that path instead (the handle's ``url`` is
    then ``unix:PATH``, the file gets ``socket_mode``). ``service`` becomes the handle's ``app``;
    ``before_close`` runs first on close; requests in flight get ``graceful_s`` to finish.
    ``handle_class`` (a subclass) and ``handle_options`` make a richer handle.

    Every server started here is guarded (:mod:`agentrl.serving.guard`): :class:`GuardMiddleware` answers
    403 to a ``Host`` or ``Origin`` the bind does not allow (``allowed_hosts`` and ``allowed_origins`` add some)
    and 408 to a body slower than ``body_timeout_s``; the connection protocol holds at most
    ``max_connections`` connections (503 past that) and closes one whose headers take longer than
    ``header_timeout_s``; WebSocket messages above ``ws_max_bytes`` close the socket. ``error_body`` shapes
    the guard's error answers as the server's own.

    Raises:
        OSError: the address cannot be bound.
        RuntimeError: the server did not start within ``timeout_s``.
        DependencyNotInstalled: uvicorn is missing.
    """
    try:
        import uvicorn
        from uvicorn.protocols.http.auto import AutoHTTPProtocol
    except ImportError as exc:
        from agentrl.core.errors import DependencyNotInstalled

        raise DependencyNotInstalled("uvicorn", extra="serve") from exc

    exposure = Exposure.for_bind(
        host, unix_socket=unix_socket, allowed_hosts=allowed_hosts, allowed_origins=allowed_origins
    )
    guarded = GuardMiddleware(
        app, exposure, body_timeout_s=body_timeout_s, error_body=error_body, logger=logging.getLogger(name)
    )
    raise_open_files_limit(max_connections + 1024)  # the limit, then the server's own files (envs, pipes, logs)
    sock = bind_socket(host, port, unix_socket=unix_socket, socket_mode=socket_mode)
    config = uvicorn.Config(
        guarded,
        log_config=None,  # a library does not reconfigure the process's logging
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=max(1, math.ceil(graceful_s)),  # uvicorn takes whole seconds
        server_header=False,
        http=guarded_protocol(AutoHTTPProtocol, max_connections=max_connections, header_timeout_s=header_timeout_s),
        ws_max_size=ws_max_bytes,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=name, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            thread.join(2.0)
            sock.close()
            where = unix_socket or f"{host}:{port}"
            raise RuntimeError(f"{name} on {where} did not start")
        time.sleep(0.005)
    if unix_socket is not None:
        url = f"unix:{unix_socket}"
    else:
        shown = f"[{host}]" if ":" in host else host
        url = f"http://{shown}:{sock.getsockname()[1]}"
    return handle_class(server, thread, url, app=service, before_close=before_close, **handle_options)


# -- the command line that every server shares ----------------------------------------------------------------
def add_guard_arguments(parser: Any) -> None:
    """Add the options of :func:`start_server_thread`'s guard to a server's ``argparse`` parser.

    ``--allowed-host NAME`` and ``--allowed-origin ORIGIN`` (repeatable), ``--max-connections N`` and
    ``--header-timeout S``; :func:`guard_options` turns the parsed values into ``start_server_thread`` keywords.
    """
    parser.add_argument(
        "--allowed-host", action="append", default=[], metavar="NAME",
        help="a Host name to answer besides loopback's (repeatable); other names are refused (DNS rebinding)",
    )
    parser.add_argument(
        "--allowed-origin", action="append", default=[], metavar="ORIGIN",
        help="a web origin (scheme://host:port) whose pages may call this server (repeatable); default none",
    )
    parser.add_argument(
        "--max-connections", type=int, default=DEFAULT_MAX_CONNECTIONS,
        help=f"connections held at once; one more answers 503 (default {DEFAULT_MAX_CONNECTIONS})",
    )
    parser.add_argument(
        "--header-timeout", type=float, default=DEFAULT_HEADER_TIMEOUT_S,
        help=f"seconds a connection has to send a request's headers (default {DEFAULT_HEADER_TIMEOUT_S:g})",
    )


def guard_options(args: Any) -> dict[str, Any]:
    """The :func:`start_server_thread` keywords of :func:`add_guard_arguments`' options."""
    return {
        "allowed_hosts": tuple(args.allowed_host),
        "allowed_origins": tuple(args.allowed_origin),
        "max_connections": int(args.max_connections),
        "header_timeout_s": float(args.header_timeout),
    }


def read_token(value: str | None) -> str | None:
    """A ``--token`` value: ``@FILE`` reads the token from FILE (stripped); anything else is the token itself.

    >>> read_token("s3cret"), read_token(None)
    ('s3cret', None)
    """
    if value and value.startswith("@"):
        with open(value[1:], encoding="utf-8") as handle:
            return handle.read().strip()
    return value
