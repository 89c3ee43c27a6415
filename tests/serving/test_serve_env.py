"""``agentrl serve-env``: any env id over OpenEnv's protocol, and ``gym.make(ID, remote=URL)`` back as an env.

The protocol is checked three ways: raw WebSocket and HTTP messages in OpenEnv's shapes (``openenv-core``
0.3.0's ``env_server/types.py``: ``{"type": "reset" | "step" | "state" | "close", "data": ...}`` in,
``{"type": "observation" | "state" | "error", "data": ...}`` out), OpenEnv's own ``GenericEnvClient`` (skipped,
saying why, when ``openenv-core`` is not installed), and ``agentrl check`` on remote envs. Every server here
binds 127.0.0.1 on a free port and is closed by its fixture.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from tests.paths import OSWORLD_FIXTURES

pytest.importorskip("websockets", reason="websockets is missing: pip install 'agentrl-gym[serve]'")
pytest.importorskip("uvicorn", reason="uvicorn is missing: pip install 'agentrl-gym[serve]'")

from websockets.sync.client import connect

import agentrl  # noqa: F401  (registers the ids)
from agentrl.core.episode import EpisodeEnv, Turn
from agentrl.core.errors import InvalidActionType, ResetNeeded
from agentrl.core.spaces import UnicodeText
from agentrl.serving.env_server import EnvServer, serve_env
from agentrl.serving.remote_env import RemoteEnv, RemoteEnvError
from agentrl.testing import check_domain


class CountingEnv(EpisodeEnv[str, str]):
    """A tiny env that counts closes and can be slowed down: the session tests' probe."""

    closes = 0
    step_delay_s = 0.0

    def __init__(self) -> None:
        super().__init__(max_turns=3)
        self.observation_space = UnicodeText(max_length=100)
        self.action_space = UnicodeText(max_length=100)

    def begin_episode(self, options: Any) -> tuple[str, dict[str, Any]]:
        return f"start {int(self.np_random.integers(1000))}", {}

    def act(self, turn: Turn[str]) -> None:
        time.sleep(type(self).step_delay_s)
        turn.observation = f"echo {turn.action}"
        turn.terminated = turn.action == "stop"

    def oracle_plan(self) -> list[str]:
        return ["stop"]

    def release(self) -> None:
        type(self).closes += 1


COUNTING_ID = "AgentRLTest/Counting-v0"
if COUNTING_ID not in gym.registry:
    gym.register(COUNTING_ID, entry_point=CountingEnv, disable_env_checker=True)


def _http(url: str, body: dict[str, Any] | None = None, token: str | None = None) -> tuple[int, dict[str, Any]]:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    request = urllib.request.Request(url, data=data, headers=headers, method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _ws(url: str, **kwargs: Any) -> Any:
    return connect(url.replace("http://", "ws://") + "/ws", open_timeout=10, **kwargs)


def _send(ws: Any, message: dict[str, Any] | str) -> dict[str, Any]:
    ws.send(message if isinstance(message, str) else json.dumps(message))
    return json.loads(ws.recv(timeout=60))


@pytest.fixture
def sql_server() -> Any:
    with serve_env("AgentRL/SQL-v0", insecure_loopback=True, max_sessions=4, allow_oracle=True) as handle:
        yield handle


@pytest.fixture
def counting_server() -> Any:
    CountingEnv.closes, CountingEnv.step_delay_s = 0, 0.0
    handle = serve_env(COUNTING_ID, insecure_loopback=True, max_sessions=2, idle_timeout_s=1.0, allow_oracle=True)
    yield handle
    handle.close()
    CountingEnv.step_delay_s = 0.0


def test_a_websocket_episode_in_openenvs_message_shapes(sql_server: Any) -> None:
    with _ws(sql_server.base_url) as ws:
        first = _send(ws, {"type": "reset", "data": {"seed": 0}})
        assert first["type"] == "observation"
        assert first["data"]["reward"] is None and first["data"]["done"] is False
        assert first["data"]["observation"]["obs"].startswith("Database schema")
        oracle = _send(ws, {"type": "oracle", "data": {}})["data"]["action"]
        last = _send(ws, {"type": "step", "data": {"action": oracle}})
        assert last["data"] == {**last["data"], "reward": 1.0, "done": True}
        assert last["data"]["observation"]["terminated"] and last["data"]["observation"]["info"]["turn"] == 1
        state = _send(ws, {"type": "state"})
        assert state["type"] == "state" and state["data"]["step_count"] == 1 and state["data"]["episode_id"]
        ws.send(json.dumps({"type": "close"}))


def test_the_same_episode_as_in_process(sql_server: Any) -> None:
    remote, local = gym.make("AgentRL/SQL-v0", remote=sql_server.base_url), gym.make("AgentRL/SQL-v0")
    try:
        assert remote.observation_space == local.observation_space and remote.action_space == local.action_space
        assert remote.reset(seed=3) == local.reset(seed=3)
        for action in ["<sql>SELECT name FROM sqlite_master</sql>", local.unwrapped.oracle_action()]:
            assert remote.step(action) == local.step(action)
        with pytest.raises(ResetNeeded):
            remote.step("<sql>SELECT 1</sql>")  # after the end, as in process
    finally:
        remote.close()
        local.close()


def test_http_sessions_reset_step_state_close(sql_server: Any) -> None:
    url = sql_server.base_url
    status, first = _http(url + "/reset", {"seed": 1})
    assert status == 200 and first["session_id"] and first["done"] is False
    sid = first["session_id"]
    status, step = _http(url + "/step", {"action": {"action": "<sql>SELECT 1</sql>"}, "session_id": sid})
    assert status == 200 and step["observation"]["info"]["turn"] == 1 and step["reward"] == 0.0
    status, state = _http(url + f"/state?session_id={sid}")
    assert status == 200 and state["step_count"] == 1
    assert _http(url + "/close", {"session_id": sid}) == (200, {"closed": True})
    status, gone = _http(url + "/step", {"action": {"action": "x"}, "session_id": sid})
    assert status == 404 and gone["code"] == "UNKNOWN_SESSION" and "POST /reset" in gone["message"]
    status, health = _http(url + "/health")
    assert status == 200 and health == {"status": "healthy", "sessions": 0, "max_sessions": 4}
    status, schema = _http(url + "/schema")
    assert set(schema) >= {"action", "observation", "state"} and schema["agentrl"]["env_id"] == "AgentRL/SQL-v0"


def test_bad_messages_get_errors_and_the_session_goes_on(sql_server: Any) -> None:
    with _ws(sql_server.base_url) as ws:
        assert _send(ws, "{not json")["data"]["code"] == "INVALID_JSON"
        assert _send(ws, {"type": "jump"})["data"]["code"] == "UNKNOWN_TYPE"
        assert _send(ws, {"type": "step", "data": {"act": "x"}})["data"]["code"] == "VALIDATION_ERROR"
        early = _send(ws, {"type": "step", "data": {"action": "x"}})["data"]
        assert early["error"] == "ResetNeeded" and early["code"] == "EXECUTION_ERROR"
        assert _send(ws, {"type": "reset", "data": {"seed": "zero"}})["data"]["code"] == "VALIDATION_ERROR"
        assert _send(ws, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"  # still alive
    status, body = _http(sql_server.base_url + "/step", {"action": "x", "session_id": "nope"})
    assert status == 404
    status, body = _http(sql_server.base_url + "/reset", {"seed": 0, "session_id": "s999-nope"})
    assert status == 404 and body["code"] == "UNKNOWN_SESSION"


def test_a_full_server_says_so_at_once_and_the_others_go_on(counting_server: Any) -> None:
    url = counting_server.base_url
    with _ws(url) as first, _ws(url) as second:
        _send(first, {"type": "reset", "data": {"seed": 0}})
        _send(second, {"type": "reset", "data": {"seed": 0}})
        started = time.monotonic()
        with _ws(url) as third:
            refused = json.loads(third.recv(timeout=10))
        assert time.monotonic() - started < 5
        assert refused["type"] == "error" and refused["data"]["code"] == "CAPACITY_REACHED"
        assert "--max-sessions" in refused["data"]["message"]
        status, body = _http(url + "/reset", {"seed": 0})
        assert status == 503 and body["code"] == "CAPACITY_REACHED"
        assert _send(first, {"type": "step", "data": {"action": "hi"}})["data"]["observation"]["obs"] == "echo hi"


def test_a_disconnect_mid_step_closes_that_session_only(counting_server: Any) -> None:
    url = counting_server.base_url
    CountingEnv.step_delay_s = 0.5
    with _ws(url) as other:
        _send(other, {"type": "reset", "data": {"seed": 0}})
        with _ws(url) as leaving:
            _send(leaving, {"type": "reset", "data": {"seed": 0}})
            leaving.send(json.dumps({"type": "step", "data": {"action": "going"}}))
        # closed while the step runs
        assert _send(other, {"type": "step", "data": {"action": "still"}})["data"]["observation"]["obs"] == "echo still"
        deadline = time.monotonic() + 10
        while CountingEnv.closes < 2 and time.monotonic() < deadline:  # the probe's env, then the leaver's
            time.sleep(0.05)
        assert CountingEnv.closes == 2 and counting_server.app.sessions == 1


def test_an_idle_session_is_closed_with_its_env(counting_server: Any) -> None:
    status, first = _http(counting_server.base_url + "/reset", {"seed": 0})
    assert status == 200 and counting_server.app.sessions == 1
    deadline = time.monotonic() + 10
    while counting_server.app.sessions and time.monotonic() < deadline:
        time.sleep(0.1)
    assert counting_server.app.sessions == 0 and CountingEnv.closes == 2  # the probe's and the session's
    late = {"action": {"action": "x"}, "session_id": first["session_id"]}
    status, gone = _http(counting_server.base_url + "/step", late)
    assert status == 404 and "idle" in gone["message"]


def test_the_token_is_needed_on_every_route_that_runs_anything() -> None:
    with serve_env(COUNTING_ID, token="s3cret") as handle:
        url = handle.base_url
        assert _http(url + "/reset", {"seed": 0})[0] == 401
        assert _http(url + "/reset", {"seed": 0}, token="wrong")[0] == 401
        assert _http(url + "/reset", {"seed": 0}, token="s3cret")[0] == 200
        assert _http(url + "/health")[0] == 200 and _http(url + "/schema")[0] == 200
        with pytest.raises(Exception, match=r"1008|rejected|refused|closed"):  # no header: the socket is refused
            with _ws(url) as ws:
                _send(ws, {"type": "reset", "data": {}})
        env = RemoteEnv(url, token="s3cret")
        assert env.reset(seed=0)[0].startswith("start")
        env.close()
    with serve_env(COUNTING_ID) as handle:  # no token and not --insecure-loopback: nothing runs
        status, body = _http(handle.base_url + "/reset", {"seed": 0})
        assert status == 403 and "--insecure-loopback" in body["message"]
    with pytest.raises(ValueError, match=r"allow_remote|token"):
        serve_env(COUNTING_ID, host="0.0.0.0", insecure_loopback=True)


def test_remote_make_checks_what_the_server_serves(sql_server: Any) -> None:
    with pytest.raises(RemoteEnvError, match="serves AgentRL/SQL-v0"):
        gym.make("AgentRL/TIRMath-v0", remote=sql_server.base_url)
    with pytest.raises(RemoteEnvError, match=r"other arguments.*--env-kwarg"):
        gym.make("AgentRL/SQL-v0", remote=sql_server.base_url, max_turns=2)
    with pytest.raises(RemoteEnvError, match="agentrl serve-env"):
        gym.make("AgentRL/SQL-v0", remote="http://127.0.0.1:9")  # nothing listens on the discard port
    with pytest.raises(ValueError, match="http://HOST:PORT"):
        RemoteEnv("127.0.0.1:8000")


def test_images_travel_as_png_and_arrive_equal() -> None:
    with serve_env("AgentRL/ColourLetter-v0", insecure_loopback=True, allow_oracle=True) as handle:
        remote, local = gym.make("AgentRL/ColourLetter-v0", remote=handle.base_url), gym.make("AgentRL/ColourLetter-v0")
        try:
            (robs, rinfo), (lobs, linfo) = remote.reset(seed=5), local.reset(seed=5)
            assert rinfo == linfo and remote.observation_space == local.observation_space
            assert isinstance(robs, dict) or isinstance(robs, np.ndarray)
            flat = [robs] if isinstance(robs, np.ndarray) else list(robs.values())
            other = [lobs] if isinstance(lobs, np.ndarray) else list(lobs.values())
            for a, b in zip(flat, other, strict=True):
                if isinstance(b, np.ndarray):
                    assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
                else:
                    assert a == b
        finally:
            remote.close()
            local.close()
        with _ws(handle.base_url) as ws:
            obs = _send(ws, {"type": "reset", "data": {"seed": 5}})["data"]["observation"]["obs"]
            arrays = [obs] if "__array__" in obs else [v for v in obs.values() if isinstance(v, dict)]
            assert arrays and all(a["__array__"] == "png" for a in arrays)


@pytest.mark.parametrize("env_id", ["AgentRL/SQL-v0", "AgentRL/TIRMath-v0"])
def test_agentrl_check_passes_on_a_remote_text_env(env_id: str) -> None:
    with serve_env(env_id, insecure_loopback=True, allow_oracle=True) as handle:
        check_domain(env_id, make_kwargs={"remote": handle.base_url})


def test_agentrl_check_passes_on_a_remote_game() -> None:
    pytest.importorskip("playwright", reason="playwright is missing: pip install 'agentrl-gym[browser]'")
    with serve_env("AgentRL/FlashGame-Catch-v0", insecure_loopback=True, allow_oracle=True) as handle:
        check_domain("AgentRL/FlashGame-Catch-v0", seeds=(0,), make_kwargs={"remote": handle.base_url})


def test_a_wrong_action_type_raises_the_same_error_remotely() -> None:
    with serve_env("AgentRL/ColourLetter-v0", insecure_loopback=True, allow_oracle=True) as handle:
        env = RemoteEnv(handle.base_url)
        env.reset(seed=0)
        local = gym.make("AgentRL/ColourLetter-v0")
        local.reset(seed=0)
        try:
            local.step(12345)
        except InvalidActionType:
            with pytest.raises(InvalidActionType):
                env.step(12345)
        else:
            env.step(12345)  # both accept it: the same answer either way
        finally:
            env.close()
            local.close()


def test_sessions_run_side_by_side(counting_server: Any) -> None:
    CountingEnv.step_delay_s = 0.3
    answers: list[float] = []

    def one() -> None:
        env = RemoteEnv(counting_server.base_url)
        env.reset(seed=0)
        started = time.monotonic()
        env.step("x")
        answers.append(time.monotonic() - started)
        env.close()

    threads = [threading.Thread(target=one) for _ in range(2)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(answers) == 2 and time.monotonic() - started < 0.3 * 2 + 1.0  # overlapped, not one after the other


def test_openenvs_own_client_plays_a_sql_episode(sql_server: Any) -> None:
    generic = pytest.importorskip(
        "openenv.core.generic_client",
        reason="OpenEnv's client is not installed: pip install --no-deps openenv-core==0.3.0 && pip install fastmcp",
    )
    local = gym.make("AgentRL/SQL-v0")
    local.reset(seed=2)
    oracle = local.unwrapped.oracle_action()
    local.close()
    with generic.GenericEnvClient(base_url=sql_server.base_url).sync() as client:
        first = client.reset(seed=2)
        assert first.done is False and first.observation["obs"].startswith("Database schema")
        result = client.step({"action": oracle})
        assert result.done is True and result.reward == 1.0
        assert result.observation["info"]["done_reason"] == "answered"
        assert client.state()["step_count"] == 1


def test_the_cli_prints_its_url_and_serves(tmp_path: Any) -> None:
    import subprocess
    import sys

    process = subprocess.Popen(
        [sys.executable, "-m", "agentrl.cli", "serve-env", "AgentRL/NoSuchEnv-v0", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _out, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    assert process.returncode == 2 and "error:" in err  # an id that is not registered: said, exit 2
    process = subprocess.Popen(
        [sys.executable, "-m", "agentrl.cli", "serve-env", "AgentRL/Letter-v0", "--port", "0", "--token", "t0k",
         "--allow-oracle"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline() if process.stdout else ""
        assert line.startswith("agentrl-env-server: http://127.0.0.1:"), line
        url = line.split()[-1]
        env = gym.make("AgentRL/Letter-v0", remote=url, remote_token="t0k")
        env.reset(seed=0)
        env.step(env.unwrapped.oracle_action())
        env.close()
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_server_holds_one_env_per_session_and_closes_them() -> None:
    CountingEnv.closes = 0
    server = EnvServer(COUNTING_ID, max_sessions=3, idle_timeout_s=None)
    sessions = [server.open_session() for _ in range(3)]
    assert len({id(s.env) for s in sessions}) == 3 and CountingEnv.closes == 1  # the probe's
    server.close()
    deadline = time.monotonic() + 5
    while CountingEnv.closes < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert CountingEnv.closes == 4 and server.sessions == 0


def test_openenvs_own_client_plays_an_osworld_episode_on_screenshots() -> None:
    import base64
    import io
    import shutil

    from PIL import Image

    generic = pytest.importorskip(
        "openenv.core.generic_client",
        reason="OpenEnv's client is not installed: pip install --no-deps openenv-core==0.3.0 && pip install fastmcp",
    )
    if shutil.which("Xvfb") is None or shutil.which("xterm") is None:
        pytest.skip("needs Xvfb and xterm (make test installs them: apt-get install xvfb xterm)")
    tasks = OSWORLD_FIXTURES / "env"
    task = json.loads((tasks / "t-echo.json").read_text())
    kwargs = {"tasks": str(tasks), "task_id": "t-echo"}
    with serve_env("AgentRL/OSWorld-v0", kwargs, insecure_loopback=True, max_sessions=1, allow_oracle=True) as handle:
        with generic.GenericEnvClient(base_url=handle.base_url, message_timeout_s=300).sync() as client:
            first = client.reset(seed=0)
            screenshot = first.observation["obs"]["screenshot"]
            assert screenshot["__array__"] == "png" and screenshot["shape"] == [720, 1280, 3]
            image = Image.open(io.BytesIO(base64.b64decode(screenshot["data"])))
            assert image.format == "PNG" and image.size == (1280, 720)
            assert first.observation["obs"]["instruction"].startswith("Create hello.txt")
            for action in task["oracle"]:
                result = client.step({"action": action})
            assert result.done is True and result.reward == 1.0
            assert result.observation["info"]["eval_details"][0]["score"] == 1.0
        deadline = time.monotonic() + 30
        while handle.app.sessions and time.monotonic() < deadline:  # the session and its desktop are released
            time.sleep(0.1)
        assert handle.app.sessions == 0
