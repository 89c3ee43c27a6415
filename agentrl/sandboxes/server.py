"""A sandbox server: runs sandboxes of a local tier for clients over HTTP+JSON (``agentrl serve-sandbox``).

Endpoints (``Authorization: Bearer <token>`` on every call when tokens are configured)::

    POST   /v1/sessions               {"tier": "process", "options": {"timeout_s": 5, ...}} -> {"session": id, ...}
    POST   /v1/sessions/{id}/execute  {"code": "...", "timeout_s": 2} -> the ExecutionResult fields
    POST   /v1/sessions/{id}/reset    -> {"ok": true}
    DELETE /v1/sessions/{id}          -> {"ok": true}
    GET    /v1/health                 -> {"status": "ok", "tier": ..., "isolation": ..., "sessions": n}
    POST   /run_code                  SandboxFusion's format: one Python or bash program (:mod:`.fusion`)

Errors answer ``{"error": "..."}`` with 400 (bad request), 401 (missing or wrong token), 404 (no such
session: expired, closed, or the server restarted), 413 (request or code too large), 429 (a per-client
limit: sessions, or concurrent executes) or 503 (the tier cannot start a sandbox).

The server is an ASGI app served by uvicorn in a thread (:mod:`agentrl.serving.stack`, the stack of
all our servers; HTTP/1.1 keep-alive, ``TCP_NODELAY``); each request is logged at INFO on the
``agentrl.sandboxes.server`` logger. It binds 127.0.0.1 by default; another address needs
``allow_remote=True`` (``--allow-remote``) *and* at least one token. Requests carry untrusted code
only into the sandboxes; the server itself only parses JSON.

``/run_code`` runs each request in a fresh fork of a warm stateless worker, in a fresh working directory
(SandboxFusion semantics): ``files`` are written there first, ``stdin`` is fed to the program, and
``fetch_files`` come back base64-encoded, after a timeout too. ``language`` is ``"python"`` or ``"bash"``
(bash is exec'd from the same fork: same namespaces, uid and limits). A body off SandboxFusion's schema
answers 422 ``{"detail": [...]}`` as its FastAPI does; see :mod:`agentrl.sandboxes.fusion` for the format.

>>> with serve_sandbox(tokens={"tok": "alice"}) as server:
...     server.url.startswith("http://127.0.0.1:")
True
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import re
import secrets
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from agentrl.sandboxes.base import ExecutionRequest
from agentrl.serving.guard import check_token
from agentrl.serving.stack import (
    HTTPStatusError,
    ServerHandle,
    add_guard_arguments,
    check_bearer,
    decode_body,
    guard_options,
    is_loopback,
    json_response,
    make_app,
    read_token,
    refuse_remote,
    start_server_thread,
)

__all__ = ["DEFAULT_PORT", "SandboxServer", "create_app", "main", "serve_sandbox"]

DEFAULT_PORT = 8787
_MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
LOG = logging.getLogger("agentrl.sandboxes.server")
#: the session options a client may set (others are the operator's: ``tier_options``)
ALLOWED_OPTIONS = ("timeout_s", "cpu_s", "max_output_chars", "preimport", "memory_mb", "max_file_mb", "mode")


class _Session:
    __slots__ = ("busy", "client", "id", "last_used", "lock", "sandbox", "timeout_s")

    def __init__(self, client: str, sandbox: Any, timeout_s: float) -> None:
        self.id = secrets.token_hex(16)  # 128 random bits (a uuid4 has 122)
        self.client = client
        self.sandbox = sandbox
        self.timeout_s = timeout_s
        self.lock = threading.Lock()
        self.last_used = time.monotonic()
        self.busy = 0


class SandboxServer:
    """The sandbox service, transport aside: sessions, per-client limits, idle expiry.

    Args:
        tier: the local tier sandboxes are built with (``"process"`` or ``"docker"``).
        tokens: ``{token: client name}``; empty or ``None`` serves everyone as client ``"local"``
            (loopback only).
        tier_options: constructor options the operator fixes for every sandbox (``isolation``, ...).
        max_sessions_per_client: open sessions per client (429 beyond).
        max_concurrent_per_client: executes (and ``/run_code`` calls) in flight per client (429 beyond).
        max_request_bytes: request bodies above this answer 413.
        max_code_chars: code above this answers 413.
        max_timeout_s: cap on every timeout a client asks for.
        max_memory_mb: cap on ``memory_mb``.
        max_output_chars: cap on ``max_output_chars``.
        idle_timeout_s: sessions unused this long are closed (then 404).
    """

    def __init__(
        self,
        tier: str = "process",
        *,
        tokens: Mapping[str, str] | None = None,
        tier_options: Mapping[str, Any] | None = None,
        max_sessions_per_client: int = 8,
        max_concurrent_per_client: int = 8,
        max_request_bytes: int = 4 * 1024 * 1024,
        max_code_chars: int = 2_000_000,
        max_timeout_s: float = 120.0,
        max_memory_mb: int = 4096,
        max_output_chars: int = 1_000_000,
        idle_timeout_s: float = 600.0,
    ) -> None:
        from agentrl.core.choices import check_choice

        check_choice("server tier", tier, ["docker", "process"])
        self.tier = tier
        self.tokens = dict(tokens or {})
        self.tier_options = dict(tier_options or {})
        self.max_sessions_per_client = int(max_sessions_per_client)
        self.max_concurrent_per_client = int(max_concurrent_per_client)
        self.max_request_bytes = int(max_request_bytes)
        self.max_code_chars = int(max_code_chars)
        self.max_timeout_s = float(max_timeout_s)
        self.max_memory_mb = int(max_memory_mb)
        self.max_output_chars = int(max_output_chars)
        self.idle_timeout_s = float(idle_timeout_s)
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] = {}
        self._per_client: dict[str, int] = {}
        self._in_flight: dict[str, int] = {}
        self._stateless: dict[str, list[Any]] = {}
        self._isolation: str | None = None
        self._closed = False
        self._stop = threading.Event()
        self._reaper = threading.Thread(target=self._reap_loop, name="agentrl-sandbox-reaper", daemon=True)
        self._reaper.start()

    # -- auth and limits ---------------------------------------------------------------------
    def authenticate(self, header: str | None, path: str = "/") -> str:
        """The client name for an ``Authorization`` header value (every route wants it); raises 401."""
        if not self.tokens:
            return "local"
        return check_bearer(header, self.tokens)

    @contextlib.contextmanager
    def _slot(self, client: str):
        with self._lock:
            n = self._in_flight.get(client, 0)
            if n >= self.max_concurrent_per_client:
                raise HTTPStatusError(
                    429,
                    f"client {client!r} already has {n} calls in flight, the limit "
                    f"(max_concurrent_per_client={self.max_concurrent_per_client}); wait for one",
                )
            self._in_flight[client] = n + 1
        try:
            yield
        finally:
            with self._lock:
                self._in_flight[client] -= 1

    def _options(self, options: Any) -> dict[str, Any]:
        if options is None:
            return {}
        if not isinstance(options, dict):
            raise HTTPStatusError(400, "options must be an object")
        unknown = sorted(set(options) - set(ALLOWED_OPTIONS))
        if unknown:
            raise HTTPStatusError(400, f"options {unknown} cannot be set by clients; allowed: {list(ALLOWED_OPTIONS)}")
        out: dict[str, Any] = {}
        try:
            for key in ("timeout_s", "cpu_s"):
                if key in options:
                    out[key] = min(max(float(options[key]), 0.01), self.max_timeout_s)
            if "max_output_chars" in options:
                out["max_output_chars"] = min(max(int(options["max_output_chars"]), 1), self.max_output_chars)
            if "memory_mb" in options:
                out["memory_mb"] = min(max(int(options["memory_mb"]), 16), self.max_memory_mb)
            if "max_file_mb" in options:
                out["max_file_mb"] = min(max(int(options["max_file_mb"]), 1), 1024)
            if "mode" in options:
                if options["mode"] not in ("session", "stateless"):
                    raise HTTPStatusError(400, "mode must be 'session' or 'stateless'")
                out["mode"] = options["mode"]
            if "preimport" in options:
                names = options["preimport"]
                if (
                    not isinstance(names, list)
                    or len(names) > 64
                    or not all(isinstance(n, str) and _MODULE_NAME.match(n) for n in names)
                ):
                    raise HTTPStatusError(400, "preimport must be a list of at most 64 module names")
                out["preimport"] = tuple(names)
        except (TypeError, ValueError) as exc:
            raise HTTPStatusError(400, f"bad option value: {exc}") from None
        return out

    def _build(self, options: dict[str, Any]) -> Any:
        from agentrl.sandboxes.tiers import make_sandbox

        try:
            return make_sandbox(self.tier, **{**self.tier_options, **options})
        except TypeError as exc:
            raise HTTPStatusError(400, f"the {self.tier} tier does not take these options: {exc}") from None
        except Exception as exc:  # the tier cannot start (no engine, no image, ...)
            raise HTTPStatusError(503, f"the {self.tier} tier cannot start a sandbox: {exc}") from None

    # -- sessions ----------------------------------------------------------------------------
    def create_session(self, client: str, body: dict[str, Any]) -> dict[str, Any]:
        """``POST /v1/sessions``."""
        tier = body.get("tier", self.tier)
        if tier != self.tier:
            raise HTTPStatusError(400, f"this server runs the {self.tier!r} tier, not {tier!r}")
        options = self._options(body.get("options"))
        with self._lock:
            self._check_open()
            n = self._per_client.get(client, 0)
            if n >= self.max_sessions_per_client:
                raise HTTPStatusError(
                    429,
                    f"client {client!r} already has {n} sessions, the limit "
                    f"(max_sessions_per_client={self.max_sessions_per_client}); close one "
                    f"(DELETE /v1/sessions/ID) or let idle ones expire "
                    f"({self.idle_timeout_s:g}s)",
                )
            self._per_client[client] = n + 1
        try:
            sandbox = self._build(options)
        except BaseException:
            with self._lock:
                self._per_client[client] -= 1
            raise
        timeout = float(options.get("timeout_s", getattr(sandbox, "timeout_s", 10.0)))
        session = _Session(client, sandbox, timeout)
        with self._lock:
            self._sessions[session.id] = session
            if self._isolation is None:
                self._isolation = str(getattr(sandbox, "isolation", ""))
        return {
            "session": session.id,
            "tier": self.tier,
            "timeout_s": timeout,
            "isolation": str(getattr(sandbox, "isolation", "")),
        }

    def _get(self, client: str, sid: str) -> _Session:
        with self._lock:
            self._check_open()
            session = self._sessions.get(sid)
            if session is None or session.client != client:
                raise HTTPStatusError(
                    404,
                    f"no session {sid} (closed, expired after {self.idle_timeout_s:g}s idle, or the server restarted)",
                )
            session.busy += 1
            return session

    def _release(self, session: _Session) -> None:
        with self._lock:
            session.busy -= 1
            session.last_used = time.monotonic()

    def _code(self, body: dict[str, Any]) -> str:
        code = body.get("code")
        if not isinstance(code, str):
            raise HTTPStatusError(400, "code must be a string")
        if len(code) > self.max_code_chars:
            raise HTTPStatusError(413, f"code of {len(code)} characters is over the limit of {self.max_code_chars}")
        return code

    def _timeout(self, value: Any, default: float) -> float:
        if value is None:
            return min(default, self.max_timeout_s)
        try:
            return min(max(float(value), 0.01), self.max_timeout_s)
        except (TypeError, ValueError):
            raise HTTPStatusError(400, "timeout_s must be a number") from None

    def execute(self, client: str, sid: str, body: dict[str, Any]) -> dict[str, Any]:
        """``POST /v1/sessions/{id}/execute``."""
        code = self._code(body)
        session = self._get(client, sid)
        try:
            timeout = self._timeout(body.get("timeout_s"), session.timeout_s)
            with self._slot(client), session.lock:
                result = session.sandbox.execute(ExecutionRequest(code, timeout_s=timeout))
        finally:
            self._release(session)
        return asdict(result)

    def reset(self, client: str, sid: str) -> dict[str, Any]:
        """``POST /v1/sessions/{id}/reset``."""
        session = self._get(client, sid)
        try:
            with session.lock:
                session.sandbox.reset()
        finally:
            self._release(session)
        return {"ok": True}

    def delete(self, client: str, sid: str) -> dict[str, Any]:
        """``DELETE /v1/sessions/{id}``."""
        with self._lock:
            session = self._sessions.get(sid)
            if session is None or session.client != client:
                raise HTTPStatusError(404, f"no session {sid}")
            self._drop(session)
        with session.lock:
            session.sandbox.close()
        return {"ok": True}

    def _drop(self, session: _Session) -> None:  # with self._lock held
        if self._sessions.pop(session.id, None) is not None:
            self._per_client[session.client] -= 1

    def health(self) -> dict[str, Any]:
        """``GET /v1/health``."""
        with self._lock:
            n = len(self._sessions)
            isolation = self._isolation
        if isolation is None:
            from agentrl.sandboxes.tiers import TIERS

            isolation = TIERS[self.tier]
        return {"status": "ok", "tier": self.tier, "isolation": isolation, "sessions": n}

    # -- SandboxFusion -----------------------------------------------------------------------
    def run_code(self, client: str, body: dict[str, Any]) -> dict[str, Any]:
        """``POST /run_code`` in SandboxFusion's format: one Python or bash program in a fresh stateless fork.

        Raises:
            SchemaError: the body does not fit SandboxFusion's schema (answered 422, FastAPI's shape).
        """
        from agentrl.core.errors import SandboxUnavailable
        from agentrl.sandboxes.fusion import FusionRefused, error_response, parse_run_code, run_response
        from agentrl.sandboxes.program import ProgramRequest

        if isinstance(body, dict) and isinstance(body.get("code"), str):
            self._code(body)  # 413 for code over the limit
        try:
            req = parse_run_code(body)
        except FusionRefused as exc:
            return error_response(str(exc))
        memory = None if req.memory_limit_mb is None else min(req.memory_limit_mb, self.max_memory_mb)
        program = ProgramRequest(
            req.code,
            "bash" if req.language == "bash" else "python",
            timeout_s=self._timeout(req.run_timeout, 10.0),
            stdin=req.stdin,
            files=req.files,
            fetch_files=req.fetch_files,
            memory_mb=memory,
            max_output_chars=self.max_output_chars,
        )
        with self._slot(client):
            box = self._take_stateless(client)
            try:
                result = box.run_program(program)
            except SandboxUnavailable as exc:
                return error_response(f"the {self.tier} tier could not run the code: {exc}")
            finally:
                self._give_stateless(client, box)
        return run_response(result)

    def _take_stateless(self, client: str) -> Any:
        with self._lock:
            self._check_open()
            free = self._stateless.setdefault(client, [])
            if free:
                return free.pop()
        return self._build({"mode": "stateless", "timeout_s": self.max_timeout_s})

    def _give_stateless(self, client: str, box: Any) -> None:
        with self._lock:
            if not self._closed:
                self._stateless.setdefault(client, []).append(box)
                return
        box.close()

    # -- lifecycle ---------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise HTTPStatusError(503, "the sandbox server is shutting down")

    def _reap_loop(self) -> None:
        interval = min(max(self.idle_timeout_s / 4, 0.05), 5.0)
        while not self._stop.wait(interval):
            self.expire_idle()

    def expire_idle(self) -> int:
        """Close the sessions idle for ``idle_timeout_s``; returns how many."""
        now = time.monotonic()
        with self._lock:
            stale = [s for s in self._sessions.values() if s.busy == 0 and now - s.last_used > self.idle_timeout_s]
            for s in stale:
                self._drop(s)
        for s in stale:
            with contextlib.suppress(Exception):
                s.sandbox.close()
        return len(stale)

    def close(self) -> None:
        """Close every sandbox; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            sessions = list(self._sessions.values())
            self._sessions.clear()
            self._per_client.clear()
            pools = [b for boxes in self._stateless.values() for b in boxes]
            self._stateless.clear()
        self._stop.set()
        for s in sessions:
            with contextlib.suppress(Exception):
                s.sandbox.close()
        for b in pools:
            with contextlib.suppress(Exception):
                b.close()


# -- HTTP transport -------------------------------------------------------------------------
def create_app(server: SandboxServer) -> Any:
    """The ASGI app of ``server``'s endpoints (the table in the module docstring).

    The token check, the request-size limit and the error shape are :func:`agentrl.serving.stack.make_app`'s;
    sandbox calls run in the thread pool.
    """
    from starlette.concurrency import run_in_threadpool

    async def body_of(request: Any) -> dict[str, Any]:
        return decode_body(await request.body())

    async def health(request: Any) -> Any:
        return json_response(server.health())

    async def create_session(request: Any) -> Any:
        body = await body_of(request)
        return json_response(await run_in_threadpool(server.create_session, request.state.client, body))

    async def run_code(request: Any) -> Any:
        from agentrl.sandboxes.fusion import SchemaError

        body = await body_of(request)
        try:
            return json_response(await run_in_threadpool(server.run_code, request.state.client, body))
        except SchemaError as exc:  # what SandboxFusion's FastAPI answers a request off its schema
            return json_response({"detail": exc.detail}, 422)

    async def execute(request: Any) -> Any:
        body = await body_of(request)
        sid = request.path_params["sid"]
        return json_response(await run_in_threadpool(server.execute, request.state.client, sid, body))

    async def reset(request: Any) -> Any:
        await body_of(request)
        return json_response(await run_in_threadpool(server.reset, request.state.client, request.path_params["sid"]))

    async def delete(request: Any) -> Any:
        await body_of(request)
        return json_response(await run_in_threadpool(server.delete, request.state.client, request.path_params["sid"]))

    routes = [
        ("/v1/health", "GET", health),
        ("/health", "GET", health),
        ("/v1/sessions", "POST", create_session),
        ("/run_code", "POST", run_code),
        ("/v1/sessions/{sid}/execute", "POST", execute),
        ("/v1/sessions/{sid}/reset", "POST", reset),
        ("/v1/sessions/{sid}", "DELETE", delete),
    ]
    return make_app(
        routes,
        authenticate=server.authenticate,
        logger=LOG,
        max_request_bytes=server.max_request_bytes,
        internal_prefix="internal error: ",
    )


def serve_sandbox(
    tier: str = "process",
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    tokens: Mapping[str, str] | None = None,
    allow_remote: bool = False,
    **limits: Any,
) -> ServerHandle:
    """Start a :class:`SandboxServer` in a background thread and return its handle.

    The handle's ``app`` is the :class:`SandboxServer`; closing the handle closes every sandbox first
    (calls in flight end), then the server (kept-alive connections are hung up: a restart on the
    same port works).

    Args:
        tier: the local tier to run (``"process"`` or ``"docker"``).
        host: the address to bind; loopback only unless ``allow_remote`` (and then tokens are required).
        port: 0 picks a free port.
        tokens: ``{token: client name}``.
        allow_remote: allow a non-loopback ``host``.
        **limits: the other :class:`SandboxServer` arguments (``max_sessions_per_client``, ...), and the
            guard's (``allowed_hosts``, ``allowed_origins``, ``max_connections``, ``header_timeout_s``: see
            :func:`~agentrl.serving.stack.start_server_thread`).

    Raises:
        ValueError: a non-loopback host without ``allow_remote`` or without tokens (of at least 16 characters).
        OSError: the address cannot be bound.
    """
    refuse_remote(host, allow_remote, "sandbox server")
    if not is_loopback(host) and not tokens:
        raise ValueError(
            f"refusing to serve sandboxes on {host!r} without authentication: give at least one "
            "token (tokens={'TOKEN': 'client'}, --token NAME=TOKEN)"
        )
    for token in tokens or {}:
        check_token(token, host, server="sandbox server")
    guard = {key: limits.pop(key) for key in _GUARD_KEYS if key in limits}
    app = SandboxServer(tier, tokens=tokens, **limits)
    try:
        return start_server_thread(
            create_app(app), host, port, name="agentrl-sandbox-server", service=app, before_close=app.close, **guard
        )
    except BaseException:
        app.close()
        raise


_GUARD_KEYS = ("allowed_hosts", "allowed_origins", "max_connections", "header_timeout_s")


def _parse_tokens(pairs: Sequence[str]) -> dict[str, str]:
    tokens: dict[str, str] = {}
    for pair in pairs:
        name, sep, token = pair.partition("=")
        if not sep or not name or not token:
            raise ValueError(f"--token takes NAME=TOKEN, not {pair!r}")
        tokens[token] = name
    return tokens


def main(argv: Sequence[str] | None = None) -> int:
    """``agentrl serve-sandbox``: parse arguments and serve until interrupted. Returns an exit status."""
    parser = argparse.ArgumentParser(prog="agentrl serve-sandbox", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host (needs --token)")
    parser.add_argument(
        "--token",
        action="append",
        default=[],
        metavar="NAME=TOKEN",
        help="a client and its bearer token (repeatable); TOKEN may also be @FILE",
    )
    parser.add_argument("--tier", choices=["process", "docker"], default="process")
    parser.add_argument(
        "--isolation",
        choices=["auto", "bwrap", "process"],
        default=None,
        help="process tier: the isolation level (default auto)",
    )
    parser.add_argument("--max-sessions-per-client", type=int, default=8)
    parser.add_argument("--max-concurrent-per-client", type=int, default=8)
    parser.add_argument("--max-request-bytes", type=int, default=4 * 1024 * 1024)
    parser.add_argument("--max-code-chars", type=int, default=2_000_000)
    parser.add_argument("--max-timeout-s", type=float, default=120.0)
    parser.add_argument("--idle-timeout-s", type=float, default=600.0)
    add_guard_arguments(parser)
    args = parser.parse_args(list(argv) if argv is not None else None)
    try:
        pairs = []
        for pair in args.token:
            name, sep, token = pair.partition("=")
            pairs.append(f"{name}{sep}{read_token(token) if sep else token}")
        tokens = _parse_tokens(pairs)
        tier_options = {"isolation": args.isolation} if args.isolation and args.tier == "process" else {}
        handle = serve_sandbox(
            args.tier,
            args.host,
            args.port,
            tokens=tokens,
            allow_remote=args.allow_remote,
            tier_options=tier_options,
            max_sessions_per_client=args.max_sessions_per_client,
            max_concurrent_per_client=args.max_concurrent_per_client,
            max_request_bytes=args.max_request_bytes,
            max_code_chars=args.max_code_chars,
            max_timeout_s=args.max_timeout_s,
            idle_timeout_s=args.idle_timeout_s,
            **guard_options(args),
        )
    except (ValueError, OSError, ImportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    auth = f"{len(tokens)} token(s)" if tokens else "no authentication (loopback only)"
    print(f"agentrl-sandbox-server: {handle.url}", flush=True)
    print(f"serving {args.tier} sandboxes at {handle.url} ({auth}); Ctrl-C to stop", file=sys.stderr, flush=True)
    try:
        while handle.thread.is_alive():
            handle.thread.join(1.0)
    except KeyboardInterrupt:
        pass
    finally:
        handle.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
