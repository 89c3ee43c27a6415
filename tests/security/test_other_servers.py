"""Attacks on ``agentrl serve-sandbox`` and ``agentrl serve-retriever``: the shared guard holds on both.

Low findings of the trust audit of 036fe13: the retriever had no body limit and ``--port 0`` printed ``:0``; a
one-character token was accepted with ``--allow-remote``; neither checked ``Host`` or ``Origin``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn", reason="uvicorn is missing: pip install 'agentrl-gym[serve]'")

from agentrl.sandboxes.server import serve_sandbox
from tests.security.attack import raw_request, server_process, status_of


def _post(url: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_sandbox_server_refuses_pages_and_rebinding_names() -> None:
    with serve_sandbox("process") as handle:  # no token: loopback only, as the audit found it
        code = {"code": "print(1)", "language": "python"}
        assert _post(handle.url + "/run_code", code, {"Origin": "http://127.0.0.1:9"})[0] == 403
        assert _post(handle.url + "/run_code", json.dumps(code).encode(), {"Content-Type": "text/plain"})[0] == 415
        body = json.dumps(code).encode()
        request = (b"POST /run_code HTTP/1.1\r\nHost: attacker.test\r\nContent-Type: application/json\r\n"
                   b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
        assert status_of(raw_request(handle.port, request)) == 403
        status, answer = _post(handle.url + "/run_code", code)
        assert status == 200 and answer["run_result"]["stdout"] == "1\n"


@pytest.mark.parametrize("command", ["serve-sandbox", "serve-retriever"])
def test_a_short_token_is_refused_with_allow_remote(command: str) -> None:
    token = ["--token", "a=x"] if command == "serve-sandbox" else ["--token", "x", "--generated-seed", "0"]
    done = subprocess.run(
        [sys.executable, "-m", "agentrl.cli", command, "--host", "0.0.0.0", "--allow-remote", "--port", "0", *token],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 2 and "too short" in done.stderr, done.stderr


def test_the_retriever_prints_its_port_and_caps_its_bodies(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": str(i), "contents": f'"T{i}"\ntext {i}'}) + "\n" for i in range(50)))
    argv = ["serve-retriever", "--corpus-jsonl", str(corpus), "--port", "0", "--cache-dir", str(tmp_path / "cache")]
    with server_process(argv, tmp_path, ready="agentrl-retrieval-server:") as server:
        assert server.port > 0
        assert _post(server.url + "/search", {"queries": ["text 3"], "k": 1})[0] == 200
        before = server.high_water_mb()
        status, answer = _post(server.url + "/search", {"queries": ["q" * 1000] * 20_000, "k": 1})
        assert status == 413, answer
        assert server.high_water_mb() - before < 50 and server.alive()
        assert _post(server.url + "/retrieve", {"queries": ["x"]}, {"Origin": "https://evil.example"})[0] == 403
