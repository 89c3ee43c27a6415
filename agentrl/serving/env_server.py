r"""Any registered env id as a network service, in OpenEnv's shape: ``agentrl serve-env ID``.

A trainer on a GPU node (verl, SkyRL, TRL, open-instruct, prime-rl) talks to envs that run elsewhere over this
protocol; OpenEnv's own clients (``openenv.core.GenericEnvClient``) work against it unchanged, and
:class:`~agentrl.serving.remote_env.RemoteEnv` (``gym.make(ID, remote=URL)``) turns it back into a Gymnasium env.

Routes (OpenEnv's, plus ``/close``)::

    WS   /ws         one session per connection, its own env instance; messages {"type": ..., "data": {...}}:
                     reset {seed?, options?}, step {action}, state, close (OpenEnv's), and ours: oracle (the
                     env's oracle_action: the answer, so off unless the server runs with --allow-oracle),
                     format_final {answer} (a text env's final-answer action)
                     -> {"type": "observation", "data": RESULT} | {"type": "state", ...} | {"type": "error",
                        "data": {"message", "code", "error"}}
    POST /reset      {seed?, options?, session_id?} -> RESULT + {"session_id"} (a new session without one)
    POST /step       {"action": {"action": VALUE}, "session_id"} -> RESULT + {"session_id"}
    POST /close      {"session_id"} -> {"closed": true}
    GET  /state      ?session_id=... -> {"episode_id", "step_count", "turn", "episode_active", ...}
    GET  /schema     {"action", "observation", "state"} JSON schemas, and "agentrl": the exact spaces and the
                     episode contract's attributes (what RemoteEnv rebuilds the env from); the env's arguments
                     only as digests (make_kwargs_sha256: a remote sandbox's token never leaves the server)
    GET  /health     {"status": "healthy", "sessions", "max_sessions"};  GET /metadata {"name", "description"}

    RESULT = {"observation": {"obs": OBS, "info": INFO, "terminated", "truncated"}, "reward", "done"}

An action is OpenEnv's action object with one field, ``{"action": VALUE}``: a string for a text env, an int
for a ``Discrete`` game, a dict for a ``Dict`` space. Values go through :mod:`agentrl.core.wire`: images travel
as PNG, other arrays as raw bytes, with dtype and shape. The error codes are OpenEnv's (``INVALID_JSON``,
``UNKNOWN_TYPE``, ``VALIDATION_ERROR``, ``EXECUTION_ERROR``, ``CAPACITY_REACHED``) and ours
(``UNKNOWN_SESSION``); ``error`` names the exception (``ResetNeeded``, ``InvalidActionType``...) so a client
raises the same one.

Sessions: each is one env instance with its own thread (envs are not shared between threads), ended by
``close``, by a disconnect (the step in flight finishes first), or after ``idle_timeout_s`` without a call;
its env is closed then, so no desktop or browser outlives its session. ``max_sessions`` bounds them, and
``max_sessions_per_client`` bounds one client's: one more gets ``CAPACITY_REACHED`` (HTTP 503) at once. A
session's id is 128 random bits, and it belongs to the client that opened it (the token's name): another
client's ``/step``, ``/state``, ``/reset`` or ``/close`` with that id is answered as for an unknown session.

Security (``docs/design/security.md``): loopback only unless ``allow_remote`` with a token of at least 16
characters; with tokens every route but ``/health``, ``/schema`` and ``/metadata`` needs
``Authorization: Bearer <token>``; without one, the env routes answer 403 unless ``insecure_loopback``. Every
request passes :mod:`agentrl.serving.guard` first (``Host`` and ``Origin``, body size and deadline, a
connection limit and a header timeout), and an action is checked against the action space before it is
decoded. Bad input answers 400/422, never 500.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from agentrl.core.errors import AgentRLError, InvalidActionType
from agentrl.core.wire import WireError, decode_for_space, encode, space_to_json
from agentrl.serving.guard import DEFAULT_MAX_CONNECTIONS, check_token
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

__all__ = ["EnvServer", "OracleDisabled", "ServerFull", "UnknownSession", "kwargs_digests", "serve_env"]

LOG = logging.getLogger("agentrl.env_server")
OPEN_ROUTES = frozenset({"/health", "/schema", "/metadata"})
"""Routes that answer without a token: they run nothing and say nothing secret."""
LOCAL_CLIENT = "local"
"""The client name of every caller of a server without tokens (``insecure_loopback``)."""
MAX_REQUEST_BYTES = 64 * 1024 * 1024
"""The largest request body or WebSocket message (an action, a reset's options)."""


class ServerFull(AgentRLError, RuntimeError):
    """Every session slot is taken (``CAPACITY_REACHED``)."""


class OracleDisabled(AgentRLError, PermissionError):
    """The ``oracle`` message asks for the answer; the server serves it only with ``allow_oracle``."""


class UnknownSession(AgentRLError, KeyError):
    """A ``session_id`` this server does not hold (never opened, closed, or reaped when idle)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown session"


def _env_attributes(env: gym.Env[Any, Any]) -> dict[str, Any]:
    """The episode contract's attributes a remote client needs (``agentrl check`` reads them)."""
    base: Any = env.unwrapped
    entry = f"{type(base).__module__}:{type(base).__qualname__}"
    attributes: dict[str, Any] = {
        "entry_point": entry,
        "episode_kind": getattr(base, "episode_kind", None),
        "max_turns": getattr(base, "max_turns", None),
        "budget_done_reason": getattr(base, "budget_done_reason", None),
        "deprecated_info": dict(getattr(base, "deprecated_info", {}) or {}),
        "metadata": encode({k: v for k, v in dict(env.metadata).items() if isinstance(v, (str, int, float, list))}),
    }
    action_set = getattr(base, "action_set", None)
    if action_set is not None and hasattr(action_set, "malformed_examples"):
        attributes["text"] = {
            "malformed_examples": list(action_set.malformed_examples()),
            "end_on_void_turn": bool(getattr(base, "end_on_void_turn", False)),
            "description": str(action_set.describe()) if hasattr(action_set, "describe") else "",
        }
    return attributes


def kwargs_digests(kwargs: Mapping[str, Any]) -> dict[str, str]:
    """Each ``gym.make`` argument as a digest of its wire form: what ``/schema`` shows.

    A client compares its arguments with the server's, and no value (a remote sandbox's token, say) leaves the
    server.

    >>> kwargs_digests({"max_turns": 5})
    {'max_turns': 'sha256:ef2d127de37b942b'}

    Raises:
        WireError: an argument the wire cannot carry.
    """
    return {
        str(key): "sha256:" + hashlib.sha256(json.dumps(encode(value), sort_keys=True).encode()).hexdigest()[:16]
        for key, value in kwargs.items()
    }


@dataclass
class _Session:
    id: str
    env: gym.Env[Any, Any]
    thread: ThreadPoolExecutor
    client: str = LOCAL_CLIENT
    opened: float = field(default_factory=time.monotonic)
    last_used: float = field(default_factory=time.monotonic)
    busy: int = 0
    steps: int = 0
    episode: int = 0
    closed: bool = False


class EnvServer:
    """The sessions of one env id (the ASGI app is :func:`create_app`'s; :func:`serve_env` serves both).

    Args:
        env_id: a registered id (``import agentrl`` first).
        make_kwargs: ``gym.make`` keyword arguments for every session's env.
        max_sessions: sessions at once; one more answers ``CAPACITY_REACHED``.
        idle_timeout_s: a session without a call for this long is closed (``None``: never).
        token: the bearer token the env routes need (``None``: see ``insecure_loopback``); its client is
            named ``"default"``.
        insecure_loopback: serve the env routes without a token (loopback only; OpenEnv's client sends none).
        tokens: more clients, ``{token: client name}``: each client's sessions are its own.
        allow_oracle: answer the ``oracle`` message (the env's privileged solution: the gold answer). Off by
            default: any client could otherwise score 1.0 without solving anything. For tests and oracle runs.
        max_sessions_per_client: one client's sessions at once (default: ``max_sessions`` shared evenly among
            the clients, at least 1).
    """

    def __init__(
        self,
        env_id: str,
        make_kwargs: Mapping[str, Any] | None = None,
        *,
        max_sessions: int = 16,
        idle_timeout_s: float | None = 600.0,
        token: str | None = None,
        insecure_loopback: bool = False,
        tokens: Mapping[str, str] | None = None,
        allow_oracle: bool = False,
        max_sessions_per_client: int | None = None,
    ) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be >= 1, got {max_sessions}")
        self.env_id = env_id
        self.make_kwargs = dict(make_kwargs or {})
        self.max_sessions = int(max_sessions)
        self.idle_timeout_s = idle_timeout_s
        self.tokens: dict[str, str] = dict(tokens or {})
        if token:
            self.tokens.setdefault(token, "default")
        self.token = token
        self.insecure_loopback = insecure_loopback
        self.allow_oracle = bool(allow_oracle)
        clients = max(1, len(set(self.tokens.values())))
        if max_sessions_per_client is None:
            max_sessions_per_client = max(1, self.max_sessions // clients)
        if max_sessions_per_client < 1:
            raise ValueError(f"max_sessions_per_client must be >= 1, got {max_sessions_per_client}")
        self.max_sessions_per_client = int(max_sessions_per_client)
        self._sessions: dict[str, _Session] = {}
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self.opened = 0
        """Sessions opened so far (a count for tests and logs)."""
        probe = gym.make(env_id, **self.make_kwargs)  # the spaces and attributes; starts no episode
        try:
            self.action_space = probe.action_space
            self.schema = self._schema(probe)
        finally:
            probe.close()
        self._reaper = threading.Thread(target=self._reap, name="agentrl-env-reaper", daemon=True)
        if idle_timeout_s is not None:
            self._reaper.start()

    def client_of(self, header: str | None) -> str:
        """The client an ``Authorization`` header names; 401 without a known token (403 on a server without one).

        Raises:
            HTTPStatusError: 401 or 403, with the fix.
        """
        if self.tokens:
            return str(check_bearer(header, self.tokens))
        if not self.insecure_loopback:
            raise HTTPStatusError(
                403, "this server has no token: start it with --token, or --insecure-loopback on a loopback address"
            )
        return LOCAL_CLIENT

    # -- sessions ---------------------------------------------------------------------------------
    def _schema(self, env: gym.Env[Any, Any]) -> dict[str, Any]:
        spec = env.spec
        kwargs = dict(spec.kwargs) if spec is not None else dict(self.make_kwargs)
        try:
            digests: dict[str, str] | None = kwargs_digests(kwargs)
        except WireError:
            digests = None  # not comparable by a client: it skips the check
        agentrl = {
            "env_id": self.env_id,
            "make_kwargs": None,  # the values stay here (they may hold a sandbox's token): see make_kwargs_sha256
            "make_kwargs_sha256": digests,
            "observation_space": space_to_json(env.observation_space),
            "action_space": space_to_json(env.action_space),
            **_env_attributes(env),
        }
        return {
            "action": {
                "title": "Action",
                "type": "object",
                "properties": {"action": {"description": "the env's action (see agentrl.action_space)"}},
                "required": ["action"],
            },
            "observation": {
                "title": "Observation",
                "type": "object",
                "properties": {
                    "obs": {"description": "the observation (see agentrl.observation_space); images as PNG"},
                    "info": {"type": "object"},
                    "terminated": {"type": "boolean"},
                    "truncated": {"type": "boolean"},
                },
            },
            "state": {
                "title": "State",
                "type": "object",
                "properties": {"episode_id": {"type": ["string", "null"]}, "step_count": {"type": "integer"}},
            },
            "agentrl": agentrl,
        }

    def open_session(self, client: str = LOCAL_CLIENT) -> _Session:
        """A new session of ``client`` with its own env; :class:`ServerFull` when its or all slots are taken."""
        with self._lock:
            if self._closed.is_set():
                raise ServerFull("the server is shutting down")
            if len(self._sessions) >= self.max_sessions:
                raise ServerFull(
                    f"server full: {len(self._sessions)} of {self.max_sessions} sessions in use; close one, "
                    "wait for an idle one to time out, or start the server with a larger --max-sessions"
                )
            own = sum(1 for s in self._sessions.values() if s.client == client)
            if own >= self.max_sessions_per_client:
                raise ServerFull(
                    f"client {client!r} holds {own} of its {self.max_sessions_per_client} sessions; close one, wait "
                    "for an idle one to time out, or start the server with a larger --max-sessions-per-client"
                )
            session_id = "s-" + secrets.token_hex(16)  # 128 random bits: not guessable, not counted
            thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentrl-env-session")
            session = _Session(session_id, env=None, thread=thread, client=client)  # type: ignore[arg-type]
            self._sessions[session_id] = session
            self.opened += 1
        try:
            session.env = thread.submit(gym.make, self.env_id, **self.make_kwargs).result()
        except BaseException:
            with self._lock:
                self._sessions.pop(session_id, None)
            thread.shutdown(wait=False)
            raise
        LOG.info("session %s opened (%d open)", session_id, len(self._sessions))
        return session

    def get(self, session_id: Any, client: str = LOCAL_CLIENT) -> _Session:
        """The open session ``session_id`` of ``client``; :class:`UnknownSession` names the fix.

        Another client's session is answered as an unknown one: its existence is not told either.
        """
        with self._lock:
            session = self._sessions.get(session_id) if isinstance(session_id, str) else None
        if session is not None and session.client != client:
            session = None
        if session is None or session.closed:
            raise UnknownSession(
                f"no session {session_id!r} on this server (never opened, closed, or closed after "
                f"{self.idle_timeout_s:g}s idle); POST /reset without a session_id opens one"
                if self.idle_timeout_s is not None
                else f"no session {session_id!r} on this server; POST /reset without a session_id opens one"
            )
        return session

    def close_session(self, session_id: str, client: str | None = None) -> bool:
        """Close a session and its env (after the call in flight); whether it was open (and ``client``'s, if given)."""
        with self._lock:
            found = self._sessions.get(session_id)
            if found is None or (client is not None and found.client != client):
                return False
            session = self._sessions.pop(session_id, None)
        if session is None or session.closed:
            return False
        session.closed = True
        env = session.env

        def release() -> None:
            with contextlib.suppress(Exception):
                env.close()

        session.thread.submit(release)
        session.thread.shutdown(wait=False)  # the close runs after any step in flight
        LOG.info("session %s closed after %d step(s)", session_id, session.steps)
        return True

    @property
    def sessions(self) -> int:
        """How many sessions are open."""
        with self._lock:
            return len(self._sessions)

    def _reap(self) -> None:
        assert self.idle_timeout_s is not None
        period = max(0.05, min(5.0, self.idle_timeout_s / 4))
        while not self._closed.wait(period):
            now = time.monotonic()
            with self._lock:
                idle = [s.id for s in self._sessions.values() if not s.busy and now - s.last_used > self.idle_timeout_s]
            for session_id in idle:
                LOG.info("session %s idle for more than %gs: closed", session_id, self.idle_timeout_s)
                self.close_session(session_id)

    def close(self) -> None:
        """Close every session (their envs too)."""
        self._closed.set()
        with self._lock:
            ids = list(self._sessions)
        for session_id in ids:
            self.close_session(session_id)

    # -- calls ------------------------------------------------------------------------------------------
    async def call(self, session: _Session, message_type: str, data: Mapping[str, Any]) -> dict[str, Any]:
        """Run one message's work on the session's own thread; the response message (or an error raised)."""
        session.busy += 1
        session.last_used = time.monotonic()
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(session.thread, self._work, session, message_type, dict(data))
        finally:
            session.busy -= 1
            session.last_used = time.monotonic()

    def _work(self, session: _Session, message_type: str, data: dict[str, Any]) -> dict[str, Any]:
        env = session.env
        if message_type == "reset":
            unknown = set(data) - {"seed", "options", "episode_id"}
            if unknown:
                raise _BadRequest(f"reset takes seed and options; unknown field(s): {', '.join(sorted(unknown))}")
            seed = data.get("seed")
            if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64):
                raise _BadRequest(f"seed must be an int in [0, 2**64) or null, got {seed!r}")
            options = data.get("options")
            if options is not None and not isinstance(options, Mapping):
                raise _BadRequest(f"options must be an object or null, got {type(options).__name__}")
            try:
                options = decode_for_space(options, None) if options is not None else None
            except WireError as exc:
                raise _BadRequest(f"options: {exc}") from None
            observation, info = env.reset(seed=seed, options=options)
            session.episode += 1
            session.steps = 0
            return {"type": "observation", "data": _result(observation, None, False, False, info)}
        if message_type == "step":
            if "action" not in data:
                raise _BadRequest('a step needs the action object {"action": VALUE}; got no "action" field')
            unknown = set(data) - {"action"}
            if unknown:
                raise _BadRequest(f'the action object has one field, "action"; unknown: {", ".join(sorted(unknown))}')
            try:  # against the space before decoding: a client-chosen array shape must not allocate
                action = decode_for_space(data["action"], self.action_space)
            except WireError as exc:
                raise InvalidActionType(f"{self.env_id} cannot take this action: {exc}") from None
            observation, reward, terminated, truncated, info = env.step(action)
            session.steps += 1
            return {"type": "observation", "data": _result(observation, reward, terminated, truncated, info)}
        if message_type == "state":
            base: Any = env.unwrapped
            return {
                "type": "state",
                "data": {
                    "episode_id": f"{session.id}/{session.episode}" if session.episode else None,
                    "step_count": session.steps,
                    "env_id": self.env_id,
                    "turn": getattr(base, "turn", session.steps),
                    "episode_active": bool(getattr(base, "episode_active", False)),
                },
            }
        if message_type == "oracle":
            if not self.allow_oracle:
                raise OracleDisabled(
                    "the oracle message returns the task's solution, so this server does not answer it; an "
                    "operator who wants it (tests, oracle baselines) starts the server with --allow-oracle"
                )
            oracle = getattr(env.unwrapped, "oracle_action", None)
            if oracle is None:
                raise _BadRequest(f"{self.env_id} has no oracle_action (it is not on the episode contract)")
            return {"type": "oracle", "data": {"action": encode(oracle())}}
        if message_type == "format_final":
            action_set = getattr(env.unwrapped, "action_set", None)
            if action_set is None:
                raise _BadRequest(f"{self.env_id} is not a text env: it has no final-answer format")
            return {"type": "format_final", "data": {"action": action_set.format_final(data.get("answer"))}}
        raise _UnknownType(message_type)


class _BadRequest(AgentRLError, ValueError):
    """A message whose fields are wrong (``VALIDATION_ERROR``)."""


class _UnknownType(AgentRLError, ValueError):
    def __str__(self) -> str:
        return (
            f"unknown message type {self.args[0]!r}; send reset, step, state or close (OpenEnv's), "
            "or oracle / format_final (agentrl's)"
        )


def _result(
    observation: Any, reward: Any, terminated: bool, truncated: bool, info: Mapping[str, Any]
) -> dict[str, Any]:
    return {
        "observation": {
            "obs": encode(observation),
            "info": encode(dict(info)),
            "terminated": bool(terminated),
            "truncated": bool(truncated),
        },
        "reward": None if reward is None else float(reward),
        "done": bool(terminated or truncated),
    }


def _error(exc: BaseException) -> tuple[str, int]:
    """OpenEnv's error code of ``exc`` and the HTTP status that goes with it."""
    if isinstance(exc, ServerFull):
        return "CAPACITY_REACHED", 503
    if isinstance(exc, UnknownSession):
        return "UNKNOWN_SESSION", 404
    if isinstance(exc, _UnknownType):
        return "UNKNOWN_TYPE", 400
    if isinstance(exc, (_BadRequest, WireError, InvalidActionType)):
        return "VALIDATION_ERROR", 422
    if isinstance(exc, OracleDisabled):
        return "FORBIDDEN", 403
    return "EXECUTION_ERROR", 409 if isinstance(exc, AgentRLError) else 500


def _error_data(exc: BaseException) -> dict[str, Any]:
    code, _status = _error(exc)
    return {"message": str(exc) or type(exc).__name__, "code": code, "error": type(exc).__name__}


def create_app(server: EnvServer) -> Any:
    """The ASGI app of ``server``: the HTTP routes and ``WS /ws``."""
    from starlette.websockets import WebSocket, WebSocketDisconnect

    def authenticate(header: str | None, path: str) -> str | None:
        if path in OPEN_ROUTES:
            return None
        return server.client_of(header)

    def error_body(status: int, message: str) -> dict[str, Any]:
        return {"status": "error", "message": message, "code": {503: "CAPACITY_REACHED"}.get(status, "HTTP_ERROR")}

    async def body_of(request: Any) -> dict[str, Any]:
        raw = await request.body()
        try:
            return decode_body(raw, request.headers.get("content-type")) if raw else {}
        except (ValueError, HTTPStatusError) as exc:
            raise HTTPStatusError(400, f"INVALID_JSON: {exc}") from None
        except RecursionError:
            raise HTTPStatusError(400, "INVALID_JSON: the body nests too deeply") from None

    def refuse(exc: BaseException) -> Any:
        _code, status = _error(exc)
        return json_response({"status": "error", **_error_data(exc)}, status)

    async def answer(session: Any, message_type: str, data: Mapping[str, Any]) -> Any:
        try:
            reply = await server.call(session, message_type, data)
        except Exception as exc:
            return refuse(exc)
        return json_response({**reply["data"], "session_id": session.id})

    async def reset(request: Any) -> Any:
        body = await body_of(request)
        session_id = body.pop("session_id", None)
        client = request.state.client
        try:
            if session_id is not None:
                session = server.get(session_id, client)
            else:
                session = await asyncio.get_running_loop().run_in_executor(None, server.open_session, client)
        except (ServerFull, UnknownSession) as exc:
            return refuse(exc)
        return await answer(session, "reset", body)

    async def step(request: Any) -> Any:
        body = await body_of(request)
        try:
            session = server.get(body.get("session_id"), request.state.client)
        except UnknownSession as exc:
            return refuse(exc)
        action = body.get("action")
        if not isinstance(action, Mapping):
            wrong = _BadRequest('POST /step takes {"action": {"action": VALUE}, "session_id": ...} (OpenEnv\'s shape)')
            return refuse(wrong)
        return await answer(session, "step", action)

    async def close(request: Any) -> Any:
        body = await body_of(request)
        closed = server.close_session(str(body.get("session_id")), request.state.client)
        return json_response({"closed": closed})

    async def state(request: Any) -> Any:
        try:
            session = server.get(request.query_params.get("session_id"), request.state.client)
        except UnknownSession as exc:
            return refuse(exc)
        return await answer(session, "state", {})

    def schema(request: Any) -> Any:
        return json_response(server.schema)

    def health(request: Any) -> Any:
        return json_response({"status": "healthy", "sessions": server.sessions, "max_sessions": server.max_sessions})

    def metadata(request: Any) -> Any:
        from agentrl.core.registry import describe

        try:
            description = describe(server.env_id).description
        except AgentRLError:
            description = ""  # an id registered outside agentrl
        return json_response({"name": server.env_id, "description": description, "version": server.env_id[-2:]})

    async def websocket(ws: WebSocket) -> None:
        try:
            client = server.client_of(ws.headers.get("authorization"))
        except HTTPStatusError as exc:
            await ws.close(code=1008, reason=exc.message[:120])
            return
        await ws.accept()
        try:
            session = await asyncio.get_running_loop().run_in_executor(None, server.open_session, client)
        except Exception as exc:
            with contextlib.suppress(Exception):
                await ws.send_text(json.dumps({"type": "error", "data": _error_data(exc)}))
                await ws.close()
            return
        try:
            while True:
                frame = await ws.receive()
                if frame["type"] == "websocket.disconnect":
                    break
                raw = frame.get("text")
                if raw is None:  # a binary frame: JSON in UTF-8 is taken too
                    raw = (frame.get("bytes") or b"").decode("utf-8", "replace")
                try:
                    try:
                        message = json.loads(raw)
                    except RecursionError:
                        raise ValueError("the message nests too deeply") from None
                    if not isinstance(message, dict):
                        raise ValueError("a message is a JSON object")
                except ValueError as exc:
                    data = {"message": f"Invalid JSON: {exc}", "code": "INVALID_JSON", "error": "ValueError"}
                    await ws.send_text(json.dumps({"type": "error", "data": data}))
                    continue
                kind = message.get("type", "")
                if kind == "close":
                    break
                payload = message.get("data") or {}
                try:
                    if not isinstance(payload, Mapping):
                        raise _BadRequest(f"data must be an object, got {type(payload).__name__}")
                    reply = await server.call(session, str(kind), payload)
                except Exception as exc:
                    reply = {"type": "error", "data": _error_data(exc)}
                await ws.send_text(json.dumps(reply))
        except WebSocketDisconnect:
            pass
        finally:
            server.close_session(session.id)
            with contextlib.suppress(Exception):
                await ws.close()

    routes: list[tuple[str, str | list[str], Callable[..., Any]]] = [
        ("/reset", "POST", reset),
        ("/step", "POST", step),
        ("/close", "POST", close),
        ("/state", "GET", state),
        ("/schema", "GET", schema),
        ("/health", "GET", health),
        ("/metadata", "GET", metadata),
    ]
    return make_app(
        routes,
        error_body=error_body,
        authenticate=authenticate,
        logger=LOG,
        max_request_bytes=MAX_REQUEST_BYTES,
        websocket_routes=[("/ws", websocket)],
    )


def serve_env(
    env_id: str,
    make_kwargs: Mapping[str, Any] | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    token: str | None = None,
    allow_remote: bool = False,
    insecure_loopback: bool = False,
    max_sessions: int = 16,
    idle_timeout_s: float | None = 600.0,
    tokens: Mapping[str, str] | None = None,
    allow_oracle: bool = False,
    max_sessions_per_client: int | None = None,
    **guard: Any,
) -> ServerHandle:
    """Serve ``env_id`` in a daemon thread; the handle has ``base_url``, ``close()`` and ``app`` (an EnvServer).

    ``tokens``, ``allow_oracle`` and ``max_sessions_per_client`` are :class:`EnvServer`'s; ``guard`` goes to
    :func:`~agentrl.serving.stack.start_server_thread` (``allowed_hosts``, ``allowed_origins``,
    ``max_connections``, ``header_timeout_s``...).

    Raises:
        ValueError: a non-loopback ``host`` without ``allow_remote`` and a token (of at least 16 characters);
            ``insecure_loopback`` off loopback.
    """
    refuse_remote(host, allow_remote, "env server")
    if not is_loopback(host) and not (token or tokens):
        raise ValueError(f"refusing to serve an env on {host!r} without authentication: give a token")
    for given in [token, *(tokens or {})]:
        check_token(given, host, server="env server")
    if insecure_loopback and not is_loopback(host):
        raise ValueError("--insecure-loopback is only allowed on a loopback address")
    server = EnvServer(
        env_id,
        make_kwargs,
        max_sessions=max_sessions,
        idle_timeout_s=idle_timeout_s,
        token=token,
        insecure_loopback=insecure_loopback,
        tokens=tokens,
        allow_oracle=allow_oracle,
        max_sessions_per_client=max_sessions_per_client,
    )
    guard.setdefault("max_connections", max(DEFAULT_MAX_CONNECTIONS, 2 * max_sessions + 64))
    guard.setdefault("ws_max_bytes", MAX_REQUEST_BYTES)
    try:
        return start_server_thread(
            create_app(server), host, port, name="agentrl-env-server", service=server, before_close=server.close,
            error_body=_guard_error, **guard,
        )
    except BaseException:
        server.close()
        raise


def _guard_error(status: int, message: str) -> dict[str, Any]:
    return {"status": "error", "message": message, "code": "HTTP_ERROR"}


def _client_tokens(values: Sequence[str]) -> dict[str, str]:
    """``--token`` values as ``{token: client}``: ``NAME=TOKEN`` names a client, a bare ``TOKEN`` is ``default``.

    >>> _client_tokens(["alice=aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"])
    {'aaaaaaaaaaaaaaaa': 'alice', 'bbbbbbbbbbbbbbbb': 'default'}
    """
    out: dict[str, str] = {}
    for value in values:
        name, sep, token = value.partition("=")
        if not sep:
            name, token = "default", value
        token = read_token(token) or ""
        if not name or not token:
            raise ValueError(f"--token takes TOKEN or NAME=TOKEN (TOKEN may be @FILE), got {value!r}")
        if token in out:
            raise ValueError("the same token is given twice; each client needs its own")
        out[token] = name
    return out


def main(argv: list[str] | None = None) -> int:
    """``agentrl serve-env ID``: serve an env id until interrupted; prints its URL on stdout. Returns an exit status."""
    import argparse
    import signal
    import sys

    from agentrl.core.options import parse_key_values

    parser = argparse.ArgumentParser(
        prog="agentrl serve-env",
        description="Serve any registered env id over OpenEnv's protocol (WS /ws, POST /reset and /step, GET "
        "/state, /schema, /health): many sessions, one env instance each. Clients: OpenEnv's GenericEnvClient, "
        "or gym.make(ID, remote=URL). The threat model: docs/design/security.md.",
    )
    parser.add_argument("env_id", help="a registered id, e.g. AgentRL/SQL-v0 (agentrl list shows them)")
    parser.add_argument("--env-kwarg", action="append", default=[], metavar="KEY=VALUE", help="gym.make argument")
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port (printed on stdout)")
    parser.add_argument("--max-sessions", type=int, default=16, help="sessions at once (default 16)")
    parser.add_argument(
        "--max-sessions-per-client", type=int, default=None,
        help="one client's sessions at once (default: --max-sessions shared evenly among the tokens' clients)",
    )
    parser.add_argument(
        "--idle-timeout", type=float, default=600.0, help="seconds without a call before a session is closed"
    )
    parser.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host (needs --token)")
    parser.add_argument(
        "--token", action="append", default=[], metavar="[NAME=]TOKEN",
        help="a bearer token clients must send (repeatable: NAME=TOKEN gives each client its own, and a client's "
        "sessions are its own); @FILE reads it from FILE; else one is made and printed",
    )
    parser.add_argument(
        "--insecure-loopback",
        action="store_true",
        help="serve without a token (loopback only; OpenEnv's GenericEnvClient sends none)",
    )
    parser.add_argument(
        "--allow-oracle",
        action="store_true",
        help="answer the oracle message, which returns each task's solution (tests and oracle baselines only: "
        "any client could then score 1.0 without solving anything)",
    )
    add_guard_arguments(parser)
    parser.add_argument("--log-level", default="warning", help="logging level of the request log (default warning)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    try:
        make_kwargs = parse_key_values(args.env_kwarg)
        tokens = _client_tokens(args.token)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    made_token = None
    if not tokens and not args.insecure_loopback:
        made_token = secrets.token_urlsafe(24)
        tokens = {made_token: "default"}
    try:
        handle = serve_env(
            args.env_id,
            make_kwargs,
            args.host,
            args.port,
            tokens=tokens,
            allow_remote=args.allow_remote,
            insecure_loopback=args.insecure_loopback,
            max_sessions=args.max_sessions,
            idle_timeout_s=args.idle_timeout if args.idle_timeout > 0 else None,
            allow_oracle=args.allow_oracle,
            max_sessions_per_client=args.max_sessions_per_client,
            **guard_options(args),
        )
    except (ValueError, OSError, AgentRLError, gym.error.Error) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    print(f"serving {args.env_id} at {handle.base_url} (at most {args.max_sessions} sessions); Ctrl-C to stop",
          file=sys.stderr, flush=True)
    if tokens:
        how = f"a token made for this run: {made_token}" if made_token else f"{len(tokens)} token(s) given with --token"
        print(f"  clients send 'Authorization: Bearer <token>' ({how}); gym.make(ID, remote=URL, remote_token=...) "
              "or AGENTRL_ENV_TOKEN", file=sys.stderr, flush=True)
    else:
        print("  WITHOUT a token (--insecure-loopback): any local user can run this env", file=sys.stderr, flush=True)
    if args.allow_oracle:
        print("  --allow-oracle: ANY CLIENT CAN ASK FOR EACH TASK'S SOLUTION (the oracle message); scores from this "
              "server measure nothing", file=sys.stderr, flush=True)
    else:
        print("  the oracle message is off (--allow-oracle turns it on, for tests and oracle runs)",
              file=sys.stderr, flush=True)
    # the ready line last: a client that waits for it finds every warning above already written
    print(f"agentrl-env-server: {handle.base_url}", flush=True)
    try:
        while not stop.is_set() and handle.thread.is_alive():
            stop.wait(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        handle.close()
    return 0
