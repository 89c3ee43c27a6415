"""Attacks on ``agentrl serve-model`` (finding 3 of the trust audit of 036fe13: one request killed it).

A 300 MB chat request grew the server to 24 GB before the kernel killed it, and a 16 MB prompt took 22 s and
2.9 GB to be tokenised, only to be refused for its length. Here the server runs as a user starts it, in its own
process with the tiny test model, and its peak memory is read from ``/proc``.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("fastapi")

from tests.security.attack import server_process

TOKEN = "model-token-0123456789abcdef"


def _post(url: str, body: Any, *, token: str | None = None, headers: dict[str, str] | None = None,
          timeout_s: float = 120.0) -> tuple[int, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    sent = {"Content-Type": "application/json", **(headers or {})}
    if token:
        sent["Authorization"] = f"Bearer {token}"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=sent), timeout=timeout_s) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.fixture(scope="module")
def model_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    argv = ["serve-model", "--model", "tiny", "--port", "0", "--token", TOKEN]
    with server_process(argv, tmp_path_factory.mktemp("model"), ready="agentrl-model-server:", timeout_s=300) as server:
        yield server


def test_a_huge_request_is_refused_before_it_is_parsed(model_server: Any) -> None:
    before = model_server.high_water_mb()
    content = "x" * (48 * 1024 * 1024)
    body = json.dumps({"model": "tiny", "messages": [{"role": "user", "content": content}]}).encode()
    start = time.monotonic()
    status, answer = _post(model_server.url + "/chat/completions", body, token=TOKEN)
    assert status == 413 and "over the limit" in answer["error"]["message"], answer
    grew = model_server.high_water_mb() - before
    assert grew < 60, f"the server's memory grew by {grew:.0f} MB on a request it refused"
    assert time.monotonic() - start < 30 and model_server.alive()


def test_the_auditors_300_mb_request_leaves_the_server_standing(model_server: Any) -> None:
    before = model_server.high_water_mb()
    body = b'{"model": "tiny", "messages": [{"role": "user", "content": "' + b"x" * (300 * 1024 * 1024) + b'"}]}'
    try:  # past 64 MiB the server answers 413 and hangs up without reading the rest: the client may see a reset
        status, _ = _post(model_server.url + "/chat/completions", body, token=TOKEN)
        assert status == 413
    except urllib.error.URLError as exc:
        assert "reset" in str(exc).lower() or "broken pipe" in str(exc).lower(), exc
    del body
    assert model_server.alive() and model_server.high_water_mb() - before < 100
    chat = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    assert _post(model_server.url + "/chat/completions", chat, token=TOKEN)[0] == 200


@pytest.mark.parametrize("route", ["/chat/completions", "/completions"])
def test_a_prompt_too_long_for_the_context_is_refused_before_tokenising(model_server: Any, route: str) -> None:
    text = "word " * (1_400_000)  # 7 MB: under the body cap, far over any context
    body = {"model": "tiny", "messages": [{"role": "user", "content": text}]} if route == "/chat/completions" \
        else {"model": "tiny", "prompt": text}
    health: list[float] = []

    def probe() -> None:  # the event loop stays free meanwhile
        start = time.monotonic()
        with urllib.request.urlopen(model_server.url.removesuffix("/v1") + "/health", timeout=30):
            health.append(time.monotonic() - start)

    start = time.monotonic()
    thread = threading.Timer(0.5, probe)
    thread.start()
    status, answer = _post(model_server.url + route, body, token=TOKEN)
    elapsed = time.monotonic() - start
    thread.join()
    assert status == 400 and "context" in answer["error"]["message"], answer
    assert elapsed < 5.0, f"refusing a 7 MB prompt took {elapsed:.1f}s"
    assert health and health[0] < 2.0


def test_the_token_guards_every_route_but_health(model_server: Any) -> None:
    chat = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    assert _post(model_server.url + "/chat/completions", chat)[0] == 401
    assert _post(model_server.url + "/chat/completions", chat, token="wrong-token-0123456789")[0] == 401
    assert _post(model_server.url + "/chat/completions", chat, token=TOKEN)[0] == 200
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(model_server.url + "/models", timeout=10)
    assert info.value.code == 401
    with urllib.request.urlopen(model_server.url.removesuffix("/v1") + "/health", timeout=10) as answer:
        assert answer.status == 200


def test_a_web_page_cannot_use_the_model(model_server: Any) -> None:
    chat = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    status, _ = _post(model_server.url + "/chat/completions", chat, token=TOKEN, headers={"Origin": "https://evil.example"})
    assert status == 403
    status, _ = _post(model_server.url + "/chat/completions", json.dumps(chat).encode(), token=TOKEN,
                      headers={"Content-Type": "text/plain"})
    assert status == 415


def test_remote_needs_a_long_token(tmp_path: Path) -> None:
    import subprocess
    import sys

    for extra in ([], ["--token", "short"]):
        done = subprocess.run(
            [sys.executable, "-m", "agentrl.cli", "serve-model", "--model", "tiny", "--host", "0.0.0.0",
             "--allow-remote", "--port", "0", *extra],
            capture_output=True, text=True, timeout=120,
        )
        assert done.returncode == 2 and ("--token" in done.stderr or "too short" in done.stderr), done.stderr
