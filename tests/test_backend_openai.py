"""OpenAICompatibleBackend against a real HTTP server on 127.0.0.1 with scripted replies."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

pytest.importorskip("httpx")

from agentrl.agents.backends.base import BackendError, GenerationConfig, LLMBackend, describe_config
from agentrl.agents.backends.openai_compatible import OpenAICompatibleBackend

pytestmark = pytest.mark.timeout(30)

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}]


def completion(text: str = "Hello!", finish: str = "stop", logprobs: list[float] | None = None) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
    if logprobs is not None:
        choice["logprobs"] = {"content": [{"token": f"t{i}", "logprob": lp} for i, lp in enumerate(logprobs)]}
    return {
        "id": "x",
        "object": "chat.completion",
        "choices": [choice],
        "usage": {"prompt_tokens": 11, "completion_tokens": 2},
    }


@dataclass
class Reply:
    status: int = 200
    body: Any = field(default_factory=completion)  # dict → JSON; str/bytes sent as is
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any


class ScriptedServer:
    """A ThreadingHTTPServer whose n-th request gets ``script(n)``; records requests and peak concurrency."""

    def __init__(self, script: Callable[[int], Reply]) -> None:
        self.script = script
        self.requests: list[Recorded] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                with server._lock:
                    index = len(server.requests)
                    try:
                        body = json.loads(raw)
                    except ValueError:
                        body = raw
                    server.requests.append(Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    reply = server.script(index)
                    if reply.delay_s and server.stopping.wait(reply.delay_s):
                        return
                    payload = reply.body if isinstance(reply.body, (str, bytes)) else json.dumps(reply.body)
                    data = payload.encode() if isinstance(payload, str) else payload
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[int], Reply]], ScriptedServer]]:
    servers: list[ScriptedServer] = []

    def start(script: Callable[[int], Reply]) -> ScriptedServer:
        servers.append(ScriptedServer(script))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def backends() -> Iterator[Callable[..., OpenAICompatibleBackend]]:
    made: list[OpenAICompatibleBackend] = []

    def make(base_url: str, **kwargs: Any) -> OpenAICompatibleBackend:
        kwargs.setdefault("backoff_s", 0.01)
        made.append(OpenAICompatibleBackend(base_url, "test-model", **kwargs))
        return made[-1]

    yield make
    for backend in made:
        backend.close()


def test_success_sends_the_request_fields_and_the_key(serve, backends, monkeypatch) -> None:
    monkeypatch.setenv("AGENTRL_TEST_KEY", "sk-very-secret")
    server = serve(lambda i: Reply(body=completion("Paris.")))
    backend = backends(server.base_url, api_key_env="AGENTRL_TEST_KEY", extra_body={"top_k": 5})
    assert isinstance(backend, LLMBackend)
    config = GenerationConfig(max_tokens=7, temperature=0.5, top_p=0.9, stop=("END",), seed=3)
    generation = backend.generate(MESSAGES, config)
    assert generation.text == "Paris."
    assert generation.finish_reason == "stop"
    assert generation.usage == {"prompt_tokens": 11, "completion_tokens": 2}
    assert generation.token_ids == () and generation.logprobs == ()
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-very-secret"
    assert request.body == {
        "model": "test-model",
        "messages": MESSAGES,
        "max_tokens": 7,
        "temperature": 0.5,
        "top_p": 0.9,
        "stop": ["END"],
        "seed": 3,
        "top_k": 5,
    }
    described = json.dumps(describe_config(backend))
    assert "sk-very-secret" not in described and "test-model" in described


def test_base_url_forms_and_no_key(serve, backends, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = serve(lambda i: Reply(body=completion("ok", finish="length")))
    root = server.base_url.removesuffix("/v1")
    for url in (root, root + "/", server.base_url + "/", server.base_url + "/chat/completions"):
        generation = backends(url).generate(MESSAGES, GenerationConfig())
        assert generation.finish_reason == "length"
    assert {r.path for r in server.requests} == {"/v1/chat/completions"}
    assert all("authorization" not in r.headers for r in server.requests)
    assert "stop" not in server.requests[0].body and "seed" not in server.requests[0].body


def test_logprobs_are_requested_and_parsed(serve, backends) -> None:
    server = serve(lambda i: Reply(body=completion("ab", logprobs=[-0.25, -1.5])))
    generation = backends(server.base_url, logprobs=True).generate(MESSAGES, GenerationConfig())
    assert server.requests[0].body["logprobs"] is True
    assert generation.logprobs == (-0.25, -1.5)


def test_vllm_token_ids_are_parsed(serve, backends) -> None:
    body = completion("ab", logprobs=[-0.1, -0.2])
    for i, entry in enumerate(body["choices"][0]["logprobs"]["content"]):
        entry["token"] = f"token_id:{100 + i}"
    server = serve(lambda i: Reply(body=body))
    generation = backends(server.base_url, logprobs=True).generate(MESSAGES, GenerationConfig())
    assert generation.token_ids == (100, 101)


def test_slow_server_times_out_after_retries(serve, backends) -> None:
    server = serve(lambda i: Reply(delay_s=5.0))
    backend = backends(server.base_url, timeout_s=0.3, max_retries=2)
    started = time.monotonic()
    with pytest.raises(BackendError, match=r"timed out") as info:
        backend.generate(MESSAGES, GenerationConfig())
    elapsed = time.monotonic() - started
    assert 0.9 <= elapsed < 2.5
    assert server.base_url in str(info.value) and "3 attempts" in str(info.value)
    assert len(server.requests) == 3


def test_500_twice_then_success(serve, backends) -> None:
    server = serve(lambda i: Reply(status=500, body="boom") if i < 2 else Reply(body=completion("fine")))
    backend = backends(server.base_url, max_retries=3)
    assert backend.generate(MESSAGES, GenerationConfig()).text == "fine"
    assert len(server.requests) == 3
    assert backend.stats["retries"] == 2


def test_always_500_fails_after_all_attempts(serve, backends) -> None:
    server = serve(lambda i: Reply(status=503, body="overloaded"))
    backend = backends(server.base_url, max_retries=2)
    with pytest.raises(BackendError, match=r"HTTP 503.*overloaded"):
        backend.generate(MESSAGES, GenerationConfig())
    assert len(server.requests) == 3


def test_400_is_not_retried_and_the_key_never_leaks(serve, backends, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-leaky")
    server = serve(lambda i: Reply(status=400, body='{"error": "bad key sk-leaky for model"}'))
    backend = backends(server.base_url, max_retries=3)
    with pytest.raises(BackendError, match=r"HTTP 400") as info:
        backend.generate(MESSAGES, GenerationConfig())
    assert len(server.requests) == 1
    assert "sk-leaky" not in str(info.value) and "bad key" in str(info.value)
    assert server.base_url in str(info.value)


@pytest.mark.parametrize(
    "body", ["<html>not json</html>", {"choices": []}, {"nothing": 1}, {"choices": [{"message": {"content": 5}}]}]
)
def test_malformed_reply_is_retried_once(serve, backends, body) -> None:
    server = serve(lambda i: Reply(body=body))
    backend = backends(server.base_url, max_retries=3)
    with pytest.raises(BackendError, match=r"malformed reply") as info:
        backend.generate(MESSAGES, GenerationConfig())
    assert len(server.requests) == 2
    assert server.base_url in str(info.value)
    if isinstance(body, str):
        assert "not json" in str(info.value)


def test_malformed_then_good_reply_succeeds(serve, backends) -> None:
    server = serve(lambda i: Reply(body="{truncated") if i == 0 else Reply(body=completion("ok")))
    assert backends(server.base_url).generate(MESSAGES, GenerationConfig()).text == "ok"
    assert len(server.requests) == 2


def test_connection_refused(backends) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    backend = backends(f"http://127.0.0.1:{port}/v1", max_retries=2)
    started = time.monotonic()
    with pytest.raises(BackendError, match=r"connection error") as info:
        backend.generate(MESSAGES, GenerationConfig())
    assert time.monotonic() - started < 2.0
    assert f"127.0.0.1:{port}" in str(info.value) and "3 attempts" in str(info.value)


def test_429_honours_retry_after(serve, backends) -> None:
    server = serve(lambda i: Reply(status=429, body="slow down", headers={"Retry-After": "1"}) if i == 0 else Reply())
    backend = backends(server.base_url, backoff_s=0.001)
    started = time.monotonic()
    assert backend.generate(MESSAGES, GenerationConfig()).text == "Hello!"
    assert 0.9 <= time.monotonic() - started < 2.0
    assert len(server.requests) == 2


def test_retry_after_is_capped(serve, backends) -> None:
    server = serve(lambda i: Reply(status=429, headers={"Retry-After": "3600"}) if i == 0 else Reply())
    backend = backends(server.base_url, max_backoff_s=0.1)
    started = time.monotonic()
    backend.generate(MESSAGES, GenerationConfig())
    assert time.monotonic() - started < 1.0


def test_max_concurrency_is_honoured(serve, backends) -> None:
    server = serve(lambda i: Reply(body=completion(f"r{i}"), delay_s=0.15))
    backend = backends(server.base_url, max_concurrency=4)

    async def main() -> list[str]:
        results = await asyncio.gather(*(backend.agenerate(MESSAGES, GenerationConfig()) for _ in range(20)))
        return [g.text for g in results]

    started = time.monotonic()
    texts = asyncio.run(main())
    elapsed = time.monotonic() - started
    assert sorted(texts) == sorted(f"r{i}" for i in range(20))
    assert server.max_in_flight == 4
    assert 0.7 <= elapsed < 3.0  # 5 waves of 0.15 s


def test_several_event_loops_and_threads(serve, backends) -> None:
    server = serve(lambda i: Reply(body=completion("x")))
    backend = backends(server.base_url)

    async def two() -> list[str]:
        return [g.text for g in await asyncio.gather(*(backend.agenerate(MESSAGES, GenerationConfig()) for _ in "ab"))]

    assert asyncio.run(two()) == ["x", "x"]
    assert asyncio.run(two()) == ["x", "x"]  # a second, fresh event loop
    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(asyncio.run(two())[0])) for _ in range(3)]
    threads += [threading.Thread(target=lambda: results.append(backend.generate(MESSAGES, GenerationConfig()).text))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["x"] * 4
    assert len(server.requests) == 11


def test_count_tokens_estimate_and_close(serve, backends) -> None:
    server = serve(lambda i: Reply())
    backend = backends(server.base_url)
    assert backend.count_tokens([{"role": "user", "content": "x" * 400}]) == pytest.approx(100, abs=10)
    backend.generate(MESSAGES, GenerationConfig())
    backend.close()
    backend.close()
    with pytest.raises(BackendError, match="closed"):
        backend.generate(MESSAGES, GenerationConfig())
