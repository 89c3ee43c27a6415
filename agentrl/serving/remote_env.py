"""An env served by ``agentrl serve-env``, as a real Gymnasium env: ``gym.make(ID, remote="http://host:port")``.

:class:`RemoteEnv` holds one session of the server (its ``WS /ws``, so the episode lives in one env instance
there) and mirrors the episode contract: the same spaces (rebuilt from ``GET /schema``), the same ``info`` keys,
``oracle_action()``, and the same errors (a step after the end raises
:class:`~agentrl.core.errors.ResetNeeded`, a wrong action type :class:`~agentrl.core.errors.InvalidActionType`).
So the bench, the rollout engine, the trainers, SB3 and ``agentrl check`` run against a remote env unchanged.

``gym.make("AgentRL/SQL-v0", remote=URL)`` checks that the server serves that env with the same arguments
(the env's arguments are the server's: ``agentrl serve-env ID --env-kwarg k=v``); ``remote_token=`` (or the
``AGENTRL_ENV_TOKEN`` variable) is the server's bearer token, ``remote_timeout_s=`` the longest wait for one
answer.
"""

from __future__ import annotations

import contextlib
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym

from agentrl.core import errors as _errors
from agentrl.core.episode import EpisodeEnv, install_remote_maker
from agentrl.core.errors import AgentRLError, EnvClosed, ResetNeeded
from agentrl.core.wire import decode, encode, space_from_json

__all__ = ["RemoteEnv", "RemoteEnvError"]

TOKEN_VARIABLE = "AGENTRL_ENV_TOKEN"


class RemoteEnvError(AgentRLError, RuntimeError):
    """The server refused a call or could not be reached; the message is the server's, or says why not."""


#: server-side exception names re-raised as the same class here (the env contract's errors)
_RERAISED: dict[str, type[Exception]] = {
    name: getattr(_errors, name) for name in ("ResetNeeded", "EnvClosed", "InvalidActionType", "UnknownTask")
}


class RemoteActionSet:
    """A text env's action set, as far as a client needs it: its description, malformed examples, final answers."""

    def __init__(self, env: RemoteEnv, text: Mapping[str, Any]) -> None:
        self._env = env
        self._malformed = [str(x) for x in text.get("malformed_examples", [])]
        self._description = str(text.get("description", ""))

    def describe(self) -> str:
        """The action format, as the server's env describes it to an agent."""
        return self._description

    def malformed_examples(self) -> Sequence[str]:
        """Actions the env must answer with an ``[error]`` observation."""
        return list(self._malformed)

    def format_final(self, answer: str) -> str:
        """The action that submits ``answer`` as the final answer (asked from the server)."""
        return str(self._env._call("format_final", {"answer": answer})["action"])


class RemoteEnv(EpisodeEnv[Any, Any]):
    """One session of an env server (``agentrl serve-env``), as a Gymnasium env on the episode contract.

    Args:
        url: the server, ``http://host:port`` (``ws://`` is derived).
        token: its bearer token (default: ``$AGENTRL_ENV_TOKEN``, else none).
        timeout_s: the longest wait for one answer (a desktop step takes seconds).
        expect: ``{"entry_point", "make_kwargs"}`` that the server must serve (``gym.make(..., remote=)``).

    Raises:
        RemoteEnvError: the server cannot be reached, refuses the token, is full, or serves another env.
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        timeout_s: float = 600.0,
        connect_timeout_s: float = 10.0,
        expect: Mapping[str, Any] | None = None,
    ) -> None:
        parsed = urllib.parse.urlsplit(url.rstrip("/"))
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"remote= takes http://HOST:PORT (the address agentrl serve-env printed), got {url!r}")
        self.url = url.rstrip("/")
        self.token = token if token is not None else os.environ.get(TOKEN_VARIABLE) or None
        self.timeout_s = float(timeout_s)
        self._ws: Any = None
        self._stack = contextlib.ExitStack()
        schema = self._get_json("/schema", connect_timeout_s)["agentrl"]
        self.env_id: str = schema["env_id"]
        if expect is not None:
            self._check_expected(schema, expect)
        super().__init__(max_turns=int(schema.get("max_turns") or 1))
        self.observation_space = space_from_json(schema["observation_space"])
        self.action_space = space_from_json(schema["action_space"])
        self.episode_kind = str(schema.get("episode_kind") or "text")  # type: ignore[misc]
        self.budget_done_reason = str(schema.get("budget_done_reason") or "max_turns")  # type: ignore[misc]
        self.deprecated_info = dict(schema.get("deprecated_info") or {})
        self.metadata = {"render_modes": [], **dict(schema.get("metadata") or {})}
        text = schema.get("text")
        self.action_set = RemoteActionSet(self, text) if text is not None else None
        self.end_on_void_turn = bool(text.get("end_on_void_turn")) if text is not None else False
        self._connect(connect_timeout_s)

    # -- the connection ---------------------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def _get_json(self, path: str, timeout_s: float) -> Any:
        request = urllib.request.Request(self.url + path, headers=self._headers())
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")[:500]
            raise RemoteEnvError(f"GET {self.url}{path} answered {exc.code}: {detail}") from None
        except (OSError, ValueError) as exc:
            raise RemoteEnvError(
                f"no env server answers at {self.url} ({exc}); start one with: agentrl serve-env ENV_ID"
            ) from None

    def _connect(self, timeout_s: float) -> None:
        try:
            from websockets.sync.client import connect
        except ImportError as exc:
            raise _errors.DependencyNotInstalled("websockets", extra="serve") from exc
        scheme = "wss" if self.url.startswith("https") else "ws"
        ws_url = f"{scheme}://{urllib.parse.urlsplit(self.url).netloc}/ws"
        try:
            connection = connect(
                ws_url, additional_headers=self._headers(), open_timeout=timeout_s, max_size=256 * 1024 * 1024
            )
            self._ws = self._stack.enter_context(connection)  # websockets' own way; closed with the stack
        except Exception as exc:
            raise RemoteEnvError(f"cannot open a session at {ws_url}: {exc}") from None

    def _call(self, message_type: str, data: Mapping[str, Any] | None = None) -> dict[str, Any]:
        if self._closed or self._ws is None:
            raise EnvClosed("this env was closed; make a new one with gym.make(...)")
        from websockets.exceptions import ConnectionClosed

        try:
            self._ws.send(json.dumps({"type": message_type, "data": dict(data or {})}))
            reply = json.loads(self._ws.recv(timeout=self.timeout_s))
        except TimeoutError:
            raise RemoteEnvError(f"{self.url} gave no answer to {message_type} within {self.timeout_s:g}s") from None
        except ConnectionClosed as exc:
            raise RemoteEnvError(
                f"the session at {self.url} ended ({exc}); the server closes a session idle too long"
            ) from None
        if reply.get("type") == "error":
            error = reply.get("data") or {}
            message = str(error.get("message", "unknown error"))
            raised = _RERAISED.get(str(error.get("error")))
            if raised is not None:
                raise raised(message)
            raise RemoteEnvError(f"{self.env_id} at {self.url}: {message} ({error.get('code')}, {error.get('error')})")
        return dict(reply.get("data") or {})

    def _check_expected(self, schema: Mapping[str, Any], expect: Mapping[str, Any]) -> None:
        served = f"{self.env_id} ({schema.get('entry_point')})"
        if expect.get("entry_point") and expect["entry_point"] != schema.get("entry_point"):
            raise RemoteEnvError(f"{self.url} serves {served}, not {expect['entry_point']}")
        wanted, theirs = expect.get("make_kwargs"), schema.get("make_kwargs_sha256")
        if wanted is None or theirs is None:
            return
        from agentrl.serving.env_server import kwargs_digests

        mine = kwargs_digests(dict(wanted))  # the server shows digests only: its values may hold secrets
        differ = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
        if differ:
            given = dict(wanted)
            shown = ", ".join(
                f"{k}: here {given.get(k, '(not given)')!r}, server {'another value' if k in theirs else '(not given)'}"
                for k in differ
            )
            raise RemoteEnvError(
                f"{self.url} serves {served} with other arguments ({shown}); the env's arguments are the "
                "server's: start it with agentrl serve-env ID --env-kwarg k=v"
            )

    # -- the gymnasium API ---------------------------------------------------------------------------------
    def _unpack(self, data: Mapping[str, Any]) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        body = data.get("observation") or {}
        info = dict(decode(body.get("info") or {}))
        self._turn = int(info.get("turn", self._turn))
        terminated, truncated = bool(body.get("terminated")), bool(body.get("truncated"))
        reward = float(data.get("reward") or 0.0)
        return decode(body.get("obs")), reward, terminated, truncated, info

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Start an episode in the server's env (``seed`` and ``options`` go there)."""
        gym.Env.reset(self, seed=seed)  # this side's np_random, as Gymnasium's checker expects
        if self._closed:
            raise EnvClosed("this env was closed; make a new one with gym.make(...)")
        self._active = False
        self._turn = 0
        self.reset_seed = seed
        data = self._call("reset", {"seed": seed, "options": encode(dict(options or {}))})
        observation, _reward, _terminated, _truncated, info = self._unpack(data)
        self._active = True
        return observation, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """One turn in the server's env."""
        if self._closed:
            raise EnvClosed("this env was closed; make a new one with gym.make(...)")
        if not self._active:
            raise ResetNeeded(
                "step() called before reset() or after the episode ended; call env.reset() to start an episode"
            )
        try:
            payload = encode(action)
        except AgentRLError as exc:
            raise _errors.InvalidActionType(f"{self.env_id} cannot take this action: {exc}") from None
        result = self._unpack(self._call("step", {"action": payload}))
        self._active = not (result[2] or result[3])
        return result

    def oracle_action(self) -> Any:
        """The server env's oracle action for the current state (tests and oracles, not policies)."""
        return decode(self._call("oracle")["action"])

    def state(self) -> dict[str, Any]:
        """The session's state (OpenEnv's ``state``: ``episode_id``, ``step_count``...)."""
        return self._call("state")

    def release(self) -> None:
        """End the session; the server closes its env."""
        ws, self._ws = self._ws, None
        if ws is None:
            return
        with contextlib.suppress(Exception):  # the server may be gone already: closing is best effort
            ws.send(json.dumps({"type": "close"}))
        with contextlib.suppress(Exception):
            self._stack.close()

    def __del__(self) -> None:
        if getattr(self, "_ws", None) is not None:
            self.release()


def make_remote(cls: type, remote: str, kwargs: dict[str, Any]) -> RemoteEnv:
    """What ``gym.make(ID, remote=URL, ...)`` returns: a :class:`RemoteEnv` checked against ``cls`` and ``kwargs``."""
    options = dict(kwargs)
    token = options.pop("remote_token", None)
    timeout_s = float(options.pop("remote_timeout_s", 600.0))
    expect = {"entry_point": f"{cls.__module__}:{cls.__qualname__}", "make_kwargs": options}
    return RemoteEnv(remote, token=token, timeout_s=timeout_s, expect=expect)


install_remote_maker(make_remote)
