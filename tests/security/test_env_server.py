"""Attacks on ``agentrl serve-env`` as a client makes them: the answer, other sessions, the server's memory.

Each test is one finding of the trust audit of 036fe13 (``docs/design/security.md`` lists them): it attacks the
server the way a hostile client or a web page would, and fails on that commit.
"""

from __future__ import annotations

import base64
import io
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("websockets", reason="websockets is missing: pip install 'agentrl-gym[serve]'")
pytest.importorskip("uvicorn", reason="uvicorn is missing: pip install 'agentrl-gym[serve]'")

from websockets.sync.client import connect

import agentrl  # noqa: F401  (registers the ids)
from agentrl.core.episode import EpisodeEnv, Turn
from agentrl.core.spaces import UnicodeText
from agentrl.serving.env_server import serve_env
from agentrl.serving.remote_env import RemoteEnvError
from tests.security.attack import raw_request, server_process, status_of

ALICE, BOB = "alice-token-0123456789", "bob-token-0123456789ab"


class SecretKwargEnv(EpisodeEnv[str, str]):
    """A text env that takes a secret among its arguments, as a remote sandbox's options carry a token."""

    def __init__(self, sandbox_options: dict[str, Any] | None = None, max_turns: int = 2) -> None:
        super().__init__(max_turns=max_turns)
        self.observation_space = UnicodeText(max_length=100)
        self.action_space = UnicodeText(max_length=100)

    def begin_episode(self, options: Any) -> tuple[str, dict[str, Any]]:
        return "say stop", {}

    def act(self, turn: Turn[str]) -> None:
        turn.observation = "ok"
        turn.terminated = turn.action == "stop"

    def oracle_plan(self) -> list[str]:
        return ["stop"]


class PointerEnv(gym.Env[np.ndarray, np.ndarray]):
    """An env whose action is a 2-vector (a pointer position): where arrays do belong."""

    observation_space = gym.spaces.Box(0.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Box(0.0, 1.0, (2,), np.float32)

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        return np.asarray(action, np.float32), float(np.sum(action)), True, False, {}


POINTER_ID = "AgentRLTest/Pointer-v0"
if POINTER_ID not in gym.registry:
    gym.register(POINTER_ID, entry_point=PointerEnv, disable_env_checker=True)
SECRET_ID = "AgentRLTest/SecretKwarg-v0"
if SECRET_ID not in gym.registry:
    gym.register(SECRET_ID, entry_point=SecretKwargEnv, disable_env_checker=True)


def _post(url: str, body: Any, *, token: str | None = None, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    sent = {"Content-Type": "application/json", **(headers or {})}
    if token:
        sent["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=data, headers=sent, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            return exc.code, json.loads(raw)
        except ValueError:
            return exc.code, raw.decode(errors="replace")


def _ws(url: str, **kwargs: Any) -> Any:
    return connect(url.replace("http://", "ws://") + "/ws", open_timeout=10, **kwargs)


def _send(ws: Any, message: dict[str, Any]) -> dict[str, Any]:
    ws.send(json.dumps(message))
    return json.loads(ws.recv(timeout=60))


# -- finding 2: the gold answer ---------------------------------------------------------------------------
def test_the_oracle_message_is_refused_unless_the_operator_allows_it() -> None:
    with serve_env("AgentRL/SQL-v0", insecure_loopback=True) as handle, _ws(handle.base_url) as ws:
        assert _send(ws, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
        reply = _send(ws, {"type": "oracle", "data": {}})
        assert reply["type"] == "error" and reply["data"]["code"] == "FORBIDDEN", reply
        assert "<solution>" not in json.dumps(reply) and "--allow-oracle" in reply["data"]["message"]
    with serve_env("AgentRL/SQL-v0", insecure_loopback=True, allow_oracle=True) as handle, _ws(handle.base_url) as ws:
        _send(ws, {"type": "reset", "data": {"seed": 0}})
        assert "<solution>" in _send(ws, {"type": "oracle", "data": {}})["data"]["action"]


def test_the_cli_says_whether_the_oracle_is_on(tmp_path: Path) -> None:
    argv = ["serve-env", "AgentRL/Letter-v0", "--port", "0", "--insecure-loopback"]
    with server_process(argv, tmp_path, ready="agentrl-env-server:") as server:
        with _ws(server.url) as ws:
            _send(ws, {"type": "reset", "data": {"seed": 0}})
            assert _send(ws, {"type": "oracle", "data": {}})["data"]["code"] == "FORBIDDEN"
        assert "the oracle message is off" in server.stderr()
    with server_process([*argv, "--allow-oracle"], tmp_path, ready="agentrl-env-server:") as server:
        assert "ANY CLIENT CAN ASK FOR EACH TASK'S SOLUTION" in server.stderr()


# -- finding 7: secrets in /schema ----------------------------------------------------------------------------
def test_schema_shows_no_argument_value_but_a_client_can_still_check_them() -> None:
    secret = "remote-sandbox-token-4f9a1c"
    kwargs = {"sandbox_options": {"url": "http://10.0.0.5:8080", "token": secret}}
    with serve_env(SECRET_ID, kwargs, token=ALICE) as handle:
        with urllib.request.urlopen(handle.base_url + "/schema", timeout=10) as response:  # no token: an open route
            body = response.read().decode()
        assert secret not in body and "10.0.0.5" not in body
        env = gym.make(SECRET_ID, remote=handle.base_url, remote_token=ALICE, **kwargs)  # the same arguments: fine
        env.close()
        with pytest.raises(RemoteEnvError, match="sandbox_options"):
            gym.make(SECRET_ID, remote=handle.base_url, remote_token=ALICE, sandbox_options={"token": "other"})


# -- finding 9: the action is checked against the space before it is decoded --------------------------------
def _png_bomb(side: int) -> dict[str, Any]:
    """A tiny PNG of ``side`` x ``side`` x 3 black pixels, claimed as a float64 array: gigabytes once decoded."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (side, side)).save(buffer, format="PNG", optimize=True)
    data = base64.b64encode(buffer.getvalue()).decode()
    return {"__array__": "png", "dtype": "<f8", "shape": [side, side, 3], "data": data}


def test_a_png_array_on_a_text_env_is_refused_before_decoding(tmp_path: Path) -> None:
    bomb = _png_bomb(5000)  # 5000 x 5000 x 3 as float64: 600 MB once decoded, about 80 KB on the wire
    assert len(json.dumps(bomb)) < 200_000
    argv = ["serve-env", "AgentRL/Letter-v0", "--port", "0", "--insecure-loopback"]
    with server_process(argv, tmp_path, ready="agentrl-env-server:") as server:
        status, reset = _post(server.url + "/reset", {"seed": 0})
        assert status == 200
        before = server.high_water_mb()
        status, answer = _post(server.url + "/step", {"action": {"action": bomb}, "session_id": reset["session_id"]})
        grew = server.high_water_mb() - before
        assert status == 422 and answer["code"] == "VALIDATION_ERROR", answer
        assert answer["error"] == "InvalidActionType" and "does not belong" in answer["message"]
        assert grew < 100, f"the server's memory grew by {grew:.0f} MB on one refused step"
        assert server.alive()


def test_an_array_of_another_shape_or_dtype_than_the_space_is_refused() -> None:
    from agentrl.core.wire import encode

    with serve_env(POINTER_ID, insecure_loopback=True) as handle:
        url = handle.base_url
        for wrong in [
            {"__array__": "raw", "dtype": "<f4", "shape": [4096, 4096], "data": ""},
            {"__array__": "raw", "dtype": "<f8", "shape": [2], "data": base64.b64encode(bytes(16)).decode()},
            {"__array__": "raw", "dtype": "<f4", "shape": [2], "data": base64.b64encode(bytes(8 * 1024)).decode()},
        ]:
            session = _post(url + "/reset", {"seed": 0})[1]["session_id"]
            status, answer = _post(url + "/step", {"action": {"action": wrong}, "session_id": session})
            assert status == 422 and answer["error"] == "InvalidActionType", answer
        session = _post(url + "/reset", {"seed": 0})[1]["session_id"]
        right = encode(np.array([0.25, 0.5], np.float32))
        status, answer = _post(url + "/step", {"action": {"action": right}, "session_id": session})
        assert status == 200 and answer["reward"] == 0.75


# -- bad input answers 400/422, never 500 -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("/reset", {"seed": -1}),
        ("/reset", {"seed": 2**70}),
        ("/reset", {"options": "x"}),
        ("/reset", {"options": {"deep": json.loads("[" * 60 + "]" * 60)}}),
        ("/reset", b"[" * 200_000 + b"]" * 200_000),
        ("/step", b'{"action": {"action": ' + b"[" * 200_000 + b"]" * 200_000 + b'}}'),
    ],
    ids=["negative-seed", "huge-seed", "options-not-object", "deep-options", "deep-json", "deep-action"],
)
def test_bad_input_is_a_client_error(route: str, body: Any) -> None:
    with serve_env("AgentRL/Letter-v0", insecure_loopback=True) as handle:
        if route == "/step":
            status, reset = _post(handle.base_url + "/reset", {"seed": 0})
            body = body.replace(b"}}", f'}}, "session_id": "{reset["session_id"]}"}}'.encode(), 1)[:-1]
        status, answer = _post(handle.base_url + route, body)
        assert 400 <= status < 500, (status, answer)


def test_a_deeply_nested_websocket_message_is_an_error_message() -> None:
    with serve_env("AgentRL/Letter-v0", insecure_loopback=True) as handle, _ws(handle.base_url) as ws:
        ws.send("[" * 200_000 + "]" * 200_000)
        reply = json.loads(ws.recv(timeout=30))
        assert reply["type"] == "error" and reply["data"]["code"] == "INVALID_JSON"
        assert _send(ws, {"type": "reset", "data": {"seed": -5}})["data"]["code"] == "VALIDATION_ERROR"
        assert _send(ws, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"  # the session goes on


# -- sessions: unguessable and their creator's -------------------------------------------------------------------
def test_sessions_have_128_bit_ids_and_belong_to_their_creator() -> None:
    tokens = {ALICE: "alice", BOB: "bob"}
    with serve_env("AgentRL/Letter-v0", tokens=tokens) as handle:
        url = handle.base_url
        status, alice = _post(url + "/reset", {"seed": 0}, token=ALICE)
        assert status == 200
        sid = alice["session_id"]
        assert len(sid.removeprefix("s-")) >= 32 and int(sid.removeprefix("s-"), 16) >= 0  # 128 bits of hex
        for route, body in [("/step", {"action": {"action": "x"}, "session_id": sid}), ("/reset", {"session_id": sid})]:
            status, answer = _post(url + route, body, token=BOB)
            assert status == 404 and answer["code"] == "UNKNOWN_SESSION", (route, answer)
        request = urllib.request.Request(f"{url}/state?session_id={sid}", headers={"Authorization": f"Bearer {BOB}"})
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request, timeout=10)
        assert info.value.code == 404
        assert _post(url + "/close", {"session_id": sid}, token=BOB) == (200, {"closed": False})
        status, stepped = _post(url + "/step", {"action": {"action": "x"}, "session_id": sid}, token=ALICE)
        assert status == 200 and stepped["session_id"] == sid  # still alice's, still open
        assert _post(url + "/close", {"session_id": sid}, token=ALICE) == (200, {"closed": True})


def test_one_client_cannot_take_every_session() -> None:
    with serve_env("AgentRL/Letter-v0", tokens={ALICE: "alice", BOB: "bob"}, max_sessions=4) as handle:
        assert handle.app.max_sessions_per_client == 2  # shared evenly by default
        for _ in range(2):
            assert _post(handle.base_url + "/reset", {}, token=ALICE)[0] == 200
        status, answer = _post(handle.base_url + "/reset", {}, token=ALICE)
        assert status == 503 and answer["code"] == "CAPACITY_REACHED" and "alice" in answer["message"]
        assert _post(handle.base_url + "/reset", {}, token=BOB)[0] == 200  # bob still gets his


# -- finding 6: web pages and rebinding names ----------------------------------------------------------------------
def test_a_foreign_host_header_is_refused(tmp_path: Path) -> None:
    with serve_env("AgentRL/Letter-v0", insecure_loopback=True) as handle:
        port = handle.port
        body = b'{"seed": 0}'
        for host, expected in [(b"evil.example:%d" % port, 403), (b"127.0.0.1:%d" % port, 200), (b"localhost", 200)]:
            request = (b"POST /reset HTTP/1.1\r\nHost: " + host + b"\r\nContent-Type: application/json\r\n"
                       b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
            assert status_of(raw_request(port, request)) == expected, host


def test_a_foreign_origin_cannot_post_or_open_a_websocket() -> None:
    with serve_env("AgentRL/Letter-v0", insecure_loopback=True, allow_oracle=True) as handle:
        url = handle.base_url
        status, answer = _post(url + "/reset", {}, headers={"Origin": "http://127.0.0.1:1"})  # another local page
        assert status == 403 and "origin" in answer["message"].lower()
        for origin in ["https://evil.example", "null"]:
            with pytest.raises(Exception, match=r"403|rejected"):
                _ws(url, origin=origin).close()
        with _ws(url, origin=url) as ws:  # the server's own origin is fine
            assert _send(ws, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"


def test_a_text_plain_post_is_not_taken_as_json() -> None:
    with serve_env("AgentRL/Letter-v0", insecure_loopback=True) as handle:
        for content_type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]:
            status, answer = _post(handle.base_url + "/reset", b'{"seed": 0}', headers={"Content-Type": content_type})
            assert status == 415 and "application/json" in answer["message"], content_type


# -- tokens ---------------------------------------------------------------------------------------------------
def test_a_short_token_is_refused_off_loopback(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="too short"):
        serve_env("AgentRL/Letter-v0", host="0.0.0.0", allow_remote=True, token="x")
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "agentrl.cli", "serve-env", "AgentRL/Letter-v0", "--host", "0.0.0.0", "--allow-remote",
         "--token", "x", "--port", "0"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2 and "too short" in done.stderr


def test_a_binary_websocket_frame_is_read_as_json_or_answered_as_an_error() -> None:
    with serve_env("AgentRL/Letter-v0", insecure_loopback=True) as handle, _ws(handle.base_url) as ws:
        ws.send(b"\xff\xfe\x00garbage")
        assert json.loads(ws.recv(timeout=30))["data"]["code"] == "INVALID_JSON"
        ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}).encode())
        assert json.loads(ws.recv(timeout=30))["type"] == "observation"
