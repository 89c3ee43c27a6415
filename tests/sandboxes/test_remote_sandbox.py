"""The sandbox server (agentrl serve-sandbox) and RemoteSandbox, on loopback."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from agentrl.core.errors import SandboxUnavailable
from agentrl.sandboxes.base import ExecutionRequest, Sandbox
from agentrl.sandboxes.remote import RemoteSandbox
from agentrl.sandboxes.server import serve_sandbox
from agentrl.sandboxes.tiers import make_sandbox

pytestmark = pytest.mark.timeout(120)

TOKENS = {"tok-alice": "alice", "tok-bob": "bob", "tok-carol": "carol", "tok-dave": "dave"}
OPTS = {"preimport": ["math"], "timeout_s": 5.0}


@pytest.fixture(scope="module")
def server():
    with serve_sandbox(
        tokens=TOKENS,
        max_sessions_per_client=3,
        max_concurrent_per_client=2,
        max_request_bytes=1024 * 1024,
        max_code_chars=200_000,
    ) as handle:
        yield handle


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_execute_state_reset_close(server):
    box = make_sandbox("remote", url=server.url, token="tok-alice", options=OPTS)
    assert isinstance(box, Sandbox)
    r = box.execute(ExecutionRequest("x = 6 * 7\nprint(x)"))
    assert r.ok and r.output == "42\n" and r.latency_s > 0
    assert box.execute(ExecutionRequest("x + 1")).output == "43\n"
    r = box.execute(ExecutionRequest("1 / 0"))
    assert not r.ok and "ZeroDivisionError" in r.error
    r = box.execute(ExecutionRequest("while True: pass", timeout_s=0.5))
    assert r.timed_out and not r.ok and "timed out" in r.error
    box.reset()
    r = box.execute(ExecutionRequest("x"))
    assert not r.ok and "NameError" in r.error
    assert box.isolation.startswith(f"remote ({server.url}): ")
    assert "rlimits" in box.isolation
    sessions = server.app.health()["sessions"]
    box.close()
    box.close()
    assert server.app.health()["sessions"] == sessions - 1
    with pytest.raises(RuntimeError, match="closed"):
        box.execute(ExecutionRequest("1"))


def test_missing_or_wrong_token_is_401(server):
    with httpx.Client(base_url=server.url) as http:
        r = http.post("/v1/sessions", json={})
        assert r.status_code == 401 and "missing token" in r.json()["error"]
        r = http.post("/v1/sessions", json={}, headers=auth("nope"))
        assert r.status_code == 401 and "wrong token" in r.json()["error"]
        assert http.get("/v1/health").status_code == 401
        assert http.post("/run_code", json={"code": "print(1)"}).status_code == 401
        assert http.get("/v1/health", headers=auth("tok-bob")).json()["status"] == "ok"
    with RemoteSandbox(server.url, token="nope", options=OPTS) as box, pytest.raises(SandboxUnavailable, match="401"):
        box.execute(ExecutionRequest("print(1)"))


def test_sessions_belong_to_their_client(server):
    with RemoteSandbox(server.url, token="tok-alice", options=OPTS) as box:
        assert box.execute(ExecutionRequest("print(1)")).ok
        sid = box._session
        with httpx.Client(base_url=server.url, headers=auth("tok-bob")) as http:
            r = http.post(f"/v1/sessions/{sid}/execute", json={"code": "print(2)"})
            assert r.status_code == 404
            assert http.delete(f"/v1/sessions/{sid}").status_code == 404
        assert box.execute(ExecutionRequest("print(3)")).output == "3\n"


def test_client_options_are_checked(server):
    with httpx.Client(base_url=server.url, headers=auth("tok-bob")) as http:
        r = http.post("/v1/sessions", json={"options": {"isolation": "process"}})
        assert r.status_code == 400 and "cannot be set by clients" in r.json()["error"]
        r = http.post("/v1/sessions", json={"tier": "docker"})
        assert r.status_code == 400 and "runs the 'process' tier" in r.json()["error"]
        assert http.post("/v1/sessions", content=b"{not json").status_code == 400
    with (
        RemoteSandbox(server.url, token="tok-bob", options={"isolation": "process"}) as box,
        pytest.raises(SandboxUnavailable, match="cannot be set by clients"),
    ):
        box.execute(ExecutionRequest("print(1)"))


def test_per_client_session_limit(server):
    with httpx.Client(base_url=server.url, headers=auth("tok-carol")) as http:
        sids = [http.post("/v1/sessions", json={"options": OPTS}).json()["session"] for _ in range(3)]
        r = http.post("/v1/sessions", json={"options": OPTS})
        assert r.status_code == 429 and "max_sessions_per_client=3" in r.json()["error"]
        # Another client is not affected.
        other = httpx.post(server.url + "/v1/sessions", json={"options": OPTS}, headers=auth("tok-bob"))
        assert other.status_code == 200
        httpx.delete(f"{server.url}/v1/sessions/{other.json()['session']}", headers=auth("tok-bob"))
        assert http.delete(f"/v1/sessions/{sids.pop()}").json() == {"ok": True}
        r = http.post("/v1/sessions", json={"options": OPTS})
        assert r.status_code == 200
        sids.append(r.json()["session"])
        for sid in sids:
            http.delete(f"/v1/sessions/{sid}")


def test_per_client_concurrent_execute_limit(server):
    boxes = [RemoteSandbox(server.url, token="tok-dave", options=OPTS) for _ in range(3)]
    try:
        for box in boxes:
            assert box.execute(ExecutionRequest("print(0)")).ok
        results = []
        threads = [
            threading.Thread(
                target=lambda b=b: results.append(
                    b.execute(ExecutionRequest("import time\ntime.sleep(1.5)\nprint('slept')"))
                )
            )
            for b in boxes[:2]
        ]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 10
        while server.app._in_flight.get("dave", 0) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        r = boxes[2].execute(ExecutionRequest("print(1)"))
        assert not r.ok and "HTTP 429" in r.error and "max_concurrent_per_client=2" in r.error
        for t in threads:
            t.join(10)
        assert [x.output for x in results] == ["slept\n", "slept\n"]
        assert boxes[2].execute(ExecutionRequest("print(1)")).output == "1\n"
    finally:
        for box in boxes:
            box.close()


def test_oversized_request_and_code(server):
    with httpx.Client(base_url=server.url, headers=auth("tok-bob")) as http:
        r = http.post("/run_code", json={"code": "x" * (2 * 1024 * 1024)})
        assert r.status_code == 413 and "over the limit" in r.json()["error"]
        r = http.post("/run_code", json={"code": "# " + "x" * 300_000})
        assert r.status_code == 413 and "code of" in r.json()["error"]
    with RemoteSandbox(server.url, token="tok-bob", options=OPTS) as box:
        r = box.execute(ExecutionRequest("# " + "x" * 300_000))
        assert not r.ok and "HTTP 413" in r.error
        assert box.execute(ExecutionRequest("print(1)")).ok


def test_server_restart_recreates_the_session():
    first = serve_sandbox(tokens=TOKENS)
    port = first.port
    box = RemoteSandbox(first.url, token="tok-alice", options=OPTS)
    try:
        assert box.execute(ExecutionRequest("x = 1")).ok
        first.close()
        with serve_sandbox(port=port, tokens=TOKENS) as second:
            r = box.execute(ExecutionRequest("print(x)"))
            assert not r.ok and "lost this session" in r.error and "send it again" in r.error
            r = box.execute(ExecutionRequest("print(x)"))
            assert not r.ok and "NameError" in r.error
            assert box.execute(ExecutionRequest("print(2)")).output == "2\n"
            assert second.app.health()["sessions"] == 1
            box.close()
            assert second.app.health()["sessions"] == 0
    finally:
        first.close()
        box.close()


def test_server_down_is_a_result_after_bounded_retries():
    handle = serve_sandbox(tokens=TOKENS)
    url = handle.url
    with RemoteSandbox(url, token="tok-alice", options=OPTS, retries=2, connect_timeout_s=1.0) as box:
        assert box.execute(ExecutionRequest("print(1)")).ok
        handle.close()
        start = time.monotonic()
        r = box.execute(ExecutionRequest("print(1)"))
        assert time.monotonic() - start < 10
        assert not r.ok and url in r.error
        assert "unreachable after 3 attempts" in r.error or "lost" in r.error or "broke" in r.error, r.error
        r = box.execute(ExecutionRequest("print(1)"))
        assert not r.ok and "unreachable after 3 attempts" in r.error
        assert "unreachable" in box.isolation or box.isolation.startswith("remote (")
        box.reset()  # never raises for a dead server
    # close() on a dead server does not raise either (checked by the with-block).


def test_idle_sessions_expire():
    with (
        serve_sandbox(tokens=TOKENS, idle_timeout_s=0.3) as handle,
        RemoteSandbox(handle.url, token="tok-alice", options=OPTS) as box,
    ):
        assert box.execute(ExecutionRequest("y = 5")).ok
        deadline = time.monotonic() + 10
        while handle.app.health()["sessions"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert handle.app.health()["sessions"] == 0
        r = box.execute(ExecutionRequest("y"))
        assert not r.ok and "lost this session" in r.error


def test_sandboxfusion_run_code(server):
    with httpx.Client(base_url=server.url, headers=auth("tok-bob"), timeout=30) as http:
        r = http.post("/run_code", json={"code": "print(6 * 7)", "language": "python", "run_timeout": 5}).json()
        assert r["status"] == "Success" and r["compile_result"] is None
        run = r["run_result"]
        assert run["status"] == "Finished" and run["return_code"] == 0 and run["stdout"] == "42\n"
        assert run["stderr"] == "" and run["execution_time"] >= 0
        # Stateless: nothing carries over between requests.
        http.post("/run_code", json={"code": "z = 1", "language": "python"})
        r = http.post("/run_code", json={"code": "print(z)", "language": "python"}).json()
        assert r["status"] == "Failed" and "NameError" in r["run_result"]["stderr"]
        r = http.post("/run_code", json={"code": "print('a')\n1 / 0", "language": "python"}).json()
        assert r["status"] == "Failed" and r["run_result"]["status"] == "Finished"
        assert r["run_result"]["return_code"] == 1 and "ZeroDivisionError" in r["run_result"]["stderr"]
        assert r["run_result"]["stdout"] == "a\n"
        r = http.post("/run_code", json={"code": "while True: pass", "language": "python", "run_timeout": 0.5}).json()
        assert r["status"] == "Failed" and r["run_result"]["status"] == "TimeLimitExceeded"
        r = http.post("/run_code", json={"code": "int main(){}", "language": "cpp"}).json()
        assert r["status"] == "SandboxError" and r["run_result"] is None
        r = http.post("/run_code", json={"code": "print(input())", "stdin": "5", "language": "python"}).json()
        assert r["status"] == "Success" and r["run_result"]["stdout"] == "5\n"  # more in test_sandboxfusion_api.py


def test_refuses_unauthenticated_remote_binding():
    with pytest.raises(ValueError, match="non-loopback"):
        serve_sandbox(host="0.0.0.0", tokens=TOKENS)
    with pytest.raises(ValueError, match="without authentication"):
        serve_sandbox(host="0.0.0.0", allow_remote=True)


def test_cli_refuses_remote_without_token(capsys):
    from agentrl.cli import main

    assert main(["serve-sandbox", "--host", "0.0.0.0", "--allow-remote"]) == 2
    assert "without authentication" in capsys.readouterr().err
    assert main(["serve-sandbox", "--token", "no-equals-sign"]) == 2


def test_tirmath_on_the_remote_tier(server):
    import gymnasium as gym

    from agentrl.testing import check_domain

    options = {"url": server.url, "token": "tok-bob", "options": {"preimport": ["math", "fractions"]}}
    check_domain("AgentRL/TIRMath-v0", seeds=(0,), make_kwargs={"sandbox": "remote", "sandbox_options": options})
    env = gym.make("AgentRL/TIRMath-v0", sandbox="remote", sandbox_options=options)
    try:
        env.reset(seed=0)
        obs, *_ = env.step("```python\nprint(2**100)\n```")
        assert "1267650600228229401496703205376" in obs
    finally:
        env.close()
    with pytest.raises(ValueError, match="needs sandbox_options"):
        gym.make("AgentRL/TIRMath-v0", sandbox="remote").reset(seed=0)
