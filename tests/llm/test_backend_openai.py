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

from agentrl.llm.base import BackendError, GenerationConfig, LLMBackend, describe_config
from agentrl.llm.openai_compatible import OpenAICompatibleBackend

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


# ---------------------------------------------------------------------- token-in generation (/completions)

PROMPT_IDS = [151644, 872, 198, 0, 42]


def text_completion(
    text: str = "ab", token_ids: list[int] | None = None, logprobs: list[float] | None = None, finish: str = "stop"
) -> dict[str, Any]:
    token_ids = [100, 101] if token_ids is None else token_ids
    logprobs = [-0.5 * (i + 1) for i in range(len(token_ids))] if logprobs is None else logprobs
    return {
        "id": "cmpl-x",
        "object": "text_completion",
        "choices": [
            {
                "index": 0,
                "text": text,
                "finish_reason": finish,
                "logprobs": {
                    "tokens": [f"token_id:{t}" for t in token_ids],
                    "token_logprobs": logprobs,
                    "top_logprobs": None,
                    "text_offset": list(range(len(token_ids))),
                },
            }
        ],
        "usage": {"prompt_tokens": len(PROMPT_IDS), "completion_tokens": len(token_ids)},
    }


def test_generate_ids_sends_the_completions_request(serve, backends, monkeypatch) -> None:
    monkeypatch.setenv("AGENTRL_TEST_KEY", "sk-ids-secret")
    server = serve(lambda i: Reply(body=text_completion("Paris", [7, 8, 2], [-0.1, -0.2, -0.3], finish="length")))
    backend = backends(server.base_url, api_key_env="AGENTRL_TEST_KEY", extra_body={"top_k": 5})
    config = GenerationConfig(max_tokens=3, temperature=0.7, top_p=0.9, stop=("END",), seed=3)
    generation = backend.generate_ids(PROMPT_IDS, config)
    (request,) = server.requests
    assert request.path == "/v1/completions"
    assert request.headers["authorization"] == "Bearer sk-ids-secret"
    assert request.body == {
        "model": "test-model",
        "prompt": PROMPT_IDS,
        "max_tokens": 3,
        "temperature": 0.7,
        "top_p": 0.9,
        "stop": ["END"],
        "seed": 3,
        "top_k": 5,
        "logprobs": 1,
        "return_tokens_as_token_ids": True,
    }
    assert generation.text == "Paris"
    assert generation.finish_reason == "length"
    assert generation.prompt_token_ids == tuple(PROMPT_IDS)
    assert generation.token_ids == (7, 8, 2)
    assert generation.logprobs == (-0.1, -0.2, -0.3)
    assert generation.usage == {"prompt_tokens": 5, "completion_tokens": 3}
    assert backend.stats["requests"] == 1
    assert backend.config()["completions_url"] == server.base_url + "/completions"


def test_generate_ids_url_forms_and_optional_fields(serve, backends) -> None:
    server = serve(lambda i: Reply(body=text_completion()))
    root = server.base_url.removesuffix("/v1")
    urls = (
        root,
        root + "/",
        server.base_url + "/",
        server.base_url + "/chat/completions",
        server.base_url + "/completions",
    )
    for url in urls:
        generation = backends(url).generate_ids((1, 2), GenerationConfig())
        assert generation.token_ids == (100, 101) and generation.prompt_token_ids == (1, 2)
    assert {r.path for r in server.requests} == {"/v1/completions"}
    body = server.requests[0].body
    assert "stop" not in body and "seed" not in body and "messages" not in body


def test_generate_ids_forces_token_fields_over_extra_body(serve, backends) -> None:
    server = serve(lambda i: Reply(body=text_completion()))
    extra = {"logprobs": True, "prompt": "hijacked", "return_tokens_as_token_ids": False}
    backends(server.base_url, extra_body=extra).generate_ids([5], GenerationConfig())
    body = server.requests[0].body
    assert body["prompt"] == [5] and body["logprobs"] == 1 and body["return_tokens_as_token_ids"] is True


def _without_ids(kind: str) -> dict[str, Any]:
    body = text_completion()
    choice = body["choices"][0]
    if kind == "text_tokens":  # the server ignored return_tokens_as_token_ids
        choice["logprobs"]["tokens"] = ["a", "b"]
    elif kind == "no_logprobs":  # the server ignored logprobs
        choice["logprobs"] = None
    elif kind == "no_logprobs_key":
        del choice["logprobs"]
    elif kind == "mixed":
        choice["logprobs"]["tokens"] = ["token_id:1", "b"]
    return body


@pytest.mark.parametrize("kind", ["text_tokens", "no_logprobs", "no_logprobs_key", "mixed"])
def test_generate_ids_without_token_ids_fails_at_once(serve, backends, kind) -> None:
    server = serve(lambda i: Reply(body=_without_ids(kind)))
    backend = backends(server.base_url, max_retries=3)
    with pytest.raises(BackendError, match=r"return_tokens_as_token_ids") as info:
        backend.generate_ids(PROMPT_IDS, GenerationConfig())
    assert server.base_url + "/completions" in str(info.value)
    assert "TransformersBackend" in str(info.value)
    assert len(server.requests) == 1  # not retried: the server would answer the same way
    assert backend.stats["failures"] == 1


def test_generate_ids_mismatched_lengths_is_a_malformed_reply(serve, backends) -> None:
    server = serve(lambda i: Reply(body=text_completion(token_ids=[1, 2], logprobs=[-0.1])))
    with pytest.raises(BackendError, match=r"malformed reply.*token_logprobs"):
        backends(server.base_url, max_retries=3).generate_ids(PROMPT_IDS, GenerationConfig())
    assert len(server.requests) == 2  # retried once, as any malformed reply


def test_generate_ids_retries_500(serve, backends) -> None:
    server = serve(lambda i: Reply(status=500, body="boom") if i < 2 else Reply(body=text_completion("ok", [9])))
    backend = backends(server.base_url, max_retries=3)
    generation = backend.generate_ids(PROMPT_IDS, GenerationConfig())
    assert generation.text == "ok" and generation.token_ids == (9,) and len(generation.logprobs) == 1
    assert len(server.requests) == 3 and backend.stats["retries"] == 2
    assert all(r.path == "/v1/completions" for r in server.requests)


def test_generate_ids_always_500_names_the_completions_url(serve, backends, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-leaky")
    server = serve(lambda i: Reply(status=503, body="overloaded sk-leaky"))
    with pytest.raises(BackendError, match=r"HTTP 503.*overloaded") as info:
        backends(server.base_url, max_retries=1).generate_ids(PROMPT_IDS, GenerationConfig())
    assert str(info.value).startswith(server.base_url + "/completions: failed after 2 attempts")
    assert "sk-leaky" not in str(info.value)


@pytest.mark.parametrize(
    ("prompt_ids", "match"),
    [
        ([], r"empty list"),
        ((), r"empty tuple"),
        ("hello", r"got str"),
        (None, r"got NoneType"),
        (5, r"got int"),
        ([1, -2, 3], r"prompt_ids\[1\] = -2"),
        ([1, 2.0], r"prompt_ids\[1\] = 2.0 \(float\)"),
        ([1, "2"], r"prompt_ids\[1\] = '2' \(str\)"),
        ([True], r"prompt_ids\[0\] = True \(bool\)"),
        ({1, 2}, r"got set"),
    ],
)
def test_generate_ids_rejects_bad_prompt_ids(serve, backends, prompt_ids, match) -> None:
    server = serve(lambda i: Reply(body=text_completion()))
    backend = backends(server.base_url)
    with pytest.raises(ValueError, match=r"non-empty sequence of non-negative ints.*" + match):
        backend.generate_ids(prompt_ids, GenerationConfig())
    with pytest.raises(ValueError, match=match):
        asyncio.run(backend.agenerate_ids(prompt_ids, GenerationConfig()))
    assert server.requests == []


def test_generate_ids_accepts_integer_arrays(serve, backends) -> None:
    np = pytest.importorskip("numpy")
    server = serve(lambda i: Reply(body=text_completion()))
    generation = backends(server.base_url).generate_ids(np.array([3, 4], dtype=np.int64), GenerationConfig())
    assert server.requests[0].body["prompt"] == [3, 4]
    assert generation.prompt_token_ids == (3, 4) and all(type(t) is int for t in generation.prompt_token_ids)


def test_agenerate_ids_concurrently(serve, backends) -> None:
    def script(i: int) -> Reply:
        return Reply(body=text_completion(f"r{i}", [1000 + i, 2]), delay_s=0.1)

    server = serve(script)
    backend = backends(server.base_url, max_concurrency=4)

    async def main() -> list[Any]:
        return await asyncio.gather(*(backend.agenerate_ids([n, n + 1], GenerationConfig()) for n in range(8)))

    started = time.monotonic()
    generations = asyncio.run(main())
    elapsed = time.monotonic() - started
    assert [g.prompt_token_ids for g in generations] == [(n, n + 1) for n in range(8)]
    # Each reply matches the request it answered.
    by_prompt = {tuple(r.body["prompt"]): i for i, r in enumerate(server.requests)}
    for g in generations:
        i = by_prompt[g.prompt_token_ids]
        assert g.text == f"r{i}" and g.token_ids == (1000 + i, 2) and len(g.logprobs) == 2
    assert server.max_in_flight == 4
    assert 0.15 <= elapsed < 1.5  # two waves of 0.1 s
