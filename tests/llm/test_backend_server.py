"""The OpenAI-compatible model server: our own OpenAICompatibleBackend against a tiny local model."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from agentrl.llm.base import GenerationConfig  # noqa: E402
from agentrl.llm.openai_compatible import OpenAICompatibleBackend  # noqa: E402
from agentrl.llm.server import ModelServer, main, serve_model  # noqa: E402
from agentrl.llm.tiny import build_tiny_model  # noqa: E402
from agentrl.llm.transformers_backend import TransformersBackend  # noqa: E402

GREEDY = GenerationConfig(max_tokens=12, temperature=0.0)
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2 + 3?"}]


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TransformersBackend]:
    """A tiny random chat model with a generous batching window."""
    path = build_tiny_model(tmp_path_factory.mktemp("models") / "tiny")
    with TransformersBackend(path, batch_wait_ms=50.0, name="tiny-test") as b:
        yield b


@pytest.fixture(scope="module")
def server(backend: TransformersBackend) -> Iterator[ModelServer]:
    """The server on a free loopback port."""
    with serve_model(backend) as s:
        yield s


@pytest.fixture
def client(server: ModelServer) -> Iterator[OpenAICompatibleBackend]:
    """Our client, asking for logprobs and token ids as a vLLM user would."""
    with OpenAICompatibleBackend(
        server.base_url,
        server.model,
        logprobs=True,
        extra_body={"return_tokens_as_token_ids": True},
        max_retries=0,
    ) as c:
        yield c


def test_models_and_health(server: ModelServer) -> None:
    """``/v1/models`` lists the served model with its context size."""
    reply = httpx.get(server.base_url + "/models").json()
    assert reply["object"] == "list"
    assert [m["id"] for m in reply["data"]] == ["tiny-test"]
    assert reply["data"][0]["max_model_len"] > 0
    assert httpx.get(server.url + "/health").json()["status"] == "ok"


def test_chat_matches_the_backend_greedy(backend: TransformersBackend, client: OpenAICompatibleBackend) -> None:
    """Chat through the server gives the backend's own greedy tokens, text and logprobs."""
    direct = backend.generate(MESSAGES, GREEDY)
    served = client.generate(MESSAGES, GREEDY)
    assert served.text == direct.text
    assert served.token_ids == direct.token_ids and served.token_ids
    assert served.logprobs == pytest.approx(direct.logprobs, abs=1e-5)
    assert served.finish_reason == direct.finish_reason
    assert served.usage == {"prompt_tokens": len(direct.prompt_token_ids), "completion_tokens": len(direct.token_ids)}


def test_chat_logprobs_openai_format(server: ModelServer, backend: TransformersBackend) -> None:
    """``logprobs: true`` gives OpenAI's ``logprobs.content`` list with decoded token strings."""
    body = {"model": server.model, "messages": MESSAGES, "max_tokens": 5, "temperature": 0, "logprobs": True}
    reply = httpx.post(server.base_url + "/chat/completions", json=body).json()
    choice = reply["choices"][0]
    assert reply["object"] == "chat.completion"
    assert choice["message"]["role"] == "assistant"
    assert choice["finish_reason"] in ("stop", "length")
    entries = choice["logprobs"]["content"]
    assert entries and all(set(e) == {"token", "logprob", "bytes", "top_logprobs"} for e in entries)
    assert not entries[0]["token"].startswith("token_id:")
    usage = reply["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert usage["completion_tokens"] == len(entries)
    # Without logprobs there are none.
    body.pop("logprobs")
    assert httpx.post(server.base_url + "/chat/completions", json=body).json()["choices"][0]["logprobs"] is None


def test_token_in_matches_the_backend(backend: TransformersBackend, client: OpenAICompatibleBackend) -> None:
    """Token-in ``/v1/completions`` (vLLM style) gives the backend's exact token ids and logprobs."""
    prompt = backend.encode_prompt(MESSAGES)
    direct = backend.generate_ids(prompt, GREEDY)
    served = client.generate_ids(prompt, GREEDY)
    assert served.token_ids == direct.token_ids and served.token_ids
    assert served.prompt_token_ids == tuple(prompt)
    assert served.logprobs == pytest.approx(direct.logprobs, abs=1e-5)
    assert served.text == direct.text
    # A seeded sample is reproducible through the server too.
    sampled = GenerationConfig(max_tokens=8, temperature=1.0, seed=7)
    assert client.generate_ids(prompt, sampled).token_ids == backend.generate_ids(prompt, sampled).token_ids


def test_completions_raw_format(server: ModelServer, backend: TransformersBackend) -> None:
    """The completions reply: text, finish_reason, ``token_id:N`` tokens and token_logprobs of equal length."""
    prompt = backend.encode_prompt(MESSAGES)
    body = {"model": server.model, "prompt": prompt, "max_tokens": 4, "temperature": 0, "logprobs": 1,
            "return_tokens_as_token_ids": True}  # fmt: skip
    reply = httpx.post(server.base_url + "/completions", json=body).json()
    choice = reply["choices"][0]
    assert reply["object"] == "text_completion"
    logprobs = choice["logprobs"]
    assert all(t.startswith("token_id:") for t in logprobs["tokens"])
    assert len(logprobs["tokens"]) == len(logprobs["token_logprobs"]) == reply["usage"]["completion_tokens"]
    assert reply["usage"]["prompt_tokens"] == len(prompt)
    # Without return_tokens_as_token_ids the tokens are text pieces.
    body["return_tokens_as_token_ids"] = False
    pieces = httpx.post(server.base_url + "/completions", json=body).json()["choices"][0]["logprobs"]["tokens"]
    assert len(pieces) == len(logprobs["tokens"]) and not any(p.startswith("token_id:") for p in pieces)


def test_stop_strings(backend: TransformersBackend, client: OpenAICompatibleBackend) -> None:
    """A stop string ends the text before it, as the backend does."""
    direct = backend.generate(MESSAGES, GenerationConfig(max_tokens=12, temperature=0.0))
    if len(direct.text) < 3:
        pytest.skip("the tiny model's greedy reply is too short to cut")
    stop = direct.text[2:3]
    config = GenerationConfig(max_tokens=12, temperature=0.0, stop=(stop,))
    assert client.generate(MESSAGES, config).text == backend.generate(MESSAGES, config).text


def test_a_streamed_reply_is_the_same_reply_in_openais_chunks(server: ModelServer) -> None:
    """``stream=true`` (what verifiers' interception sends): OpenAI's own client reads the chunks back."""
    import openai

    client = openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)
    kwargs: dict[str, Any] = {"model": "m", "messages": MESSAGES, "max_tokens": 8, "temperature": 0.0}
    whole = client.chat.completions.create(**kwargs)
    chunks = list(client.chat.completions.create(**kwargs, stream=True, stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == whole.choices[0].finish_reason
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
    prompt = client.completions.create(model="m", prompt=[1, 2, 3], max_tokens=4, temperature=0.0)
    streamed = list(client.completions.create(model="m", prompt=[1, 2, 3], max_tokens=4, temperature=0.0, stream=True))
    assert "".join(c.choices[0].text for c in streamed) == prompt.choices[0].text


@pytest.mark.parametrize(
    ("path", "body", "fragment"),
    [
        ("/chat/completions", {"model": "m", "messages": []}, "messages"),
        ("/chat/completions", {"model": "m"}, "messages"),
        ("/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "hi"}], "n": 2}, "n=1"),
        ("/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True,
                               "stream_options": 5}, "stream_options"),
        ("/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": -1},
         "temperature"),
        ("/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 0},
         "max_tokens"),
        ("/completions", {"model": "m", "prompt": []}, "empty"),
        ("/completions", {"model": "m", "prompt": [1, 10**9]}, "vocabulary"),
        ("/completions", {"model": "m", "prompt": [1, -3]}, "vocabulary"),
        ("/completions", {"model": "m", "prompt": ["a", 2]}, "prompt"),
        ("/completions", {"model": "m", "prompt": list(range(5)) * 10_000}, "context"),
    ],
)  # fmt: skip
def test_bad_requests_get_400(server: ModelServer, path: str, body: dict, fragment: str) -> None:
    """Malformed or unsupported requests: HTTP 400 with an OpenAI-style error message."""
    response = httpx.post(server.base_url + path, json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert fragment in error["message"], error["message"]


def test_not_json_gets_400(server: ModelServer) -> None:
    """A body that is not JSON is a 400 too."""
    response = httpx.post(
        server.base_url + "/chat/completions", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["error"]["message"]


def test_client_reports_400_without_retrying(server: ModelServer) -> None:
    """Our client surfaces the server's 400 message and does not retry it."""
    from agentrl.llm.base import BackendError

    with OpenAICompatibleBackend(server.base_url, server.model) as c:
        with pytest.raises(BackendError, match="400"):
            c.generate_ids([10**9], GREEDY)
        assert c.stats["retries"] == 0


def test_concurrent_requests_are_batched(backend: TransformersBackend, server: ModelServer) -> None:
    """Requests in flight at once share the backend's batches, and each gets its own answer."""
    prompts = [[{"role": "user", "content": f"Count to {n}."}] for n in range(6)]
    expected = [backend.generate(p, GREEDY).token_ids for p in prompts]
    batches_before = backend.stats["batches"]
    backend.stats["max_batch"] = 0

    async def run_all(c: OpenAICompatibleBackend) -> list:
        return await asyncio.gather(*(c.agenerate(p, GREEDY) for p in prompts))

    with OpenAICompatibleBackend(
        server.base_url, server.model, logprobs=True, extra_body={"return_tokens_as_token_ids": True}
    ) as c:
        results = asyncio.run(run_all(c))
    assert [r.token_ids for r in results] == expected
    assert backend.stats["max_batch"] > 1
    assert backend.stats["batches"] - batches_before < len(prompts)


def test_refuses_remote_hosts(backend: TransformersBackend) -> None:
    """Non-loopback hosts need allow_remote (the server has no authentication)."""
    with pytest.raises(ValueError, match="allow_remote"):
        serve_model(backend, host="0.0.0.0")
    assert main(["--model", "tiny", "--host", "0.0.0.0"]) == 2


def test_cli_help_lists_serve_model(capsys: pytest.CaptureFixture[str]) -> None:
    """``agentrl serve-model --help`` reaches the server's own parser."""
    from agentrl.cli import main as cli_main

    with pytest.raises(SystemExit) as exit_info:
        cli_main(["serve-model", "--help"])
    assert exit_info.value.code == 0
    assert "--model" in capsys.readouterr().out


def test_serve_model_cli_serves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``agentrl serve-model --model tiny`` builds the tiny model, serves it, and stops on Ctrl-C."""
    import threading

    import agentrl.llm.server as server_module

    monkeypatch.setenv("AGENTRL_CACHE", str(tmp_path))
    started: list[ModelServer] = []
    real_serve = server_module.serve_model

    def spy(*args, **kwargs):
        handle = real_serve(*args, **kwargs)
        started.append(handle)
        return handle

    monkeypatch.setattr(server_module, "serve_model", spy)
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(main(["--model", "tiny", "--port", "0"])), daemon=True)
    thread.start()
    for _ in range(600):
        if started:
            break
        thread.join(0.05)
    assert started, "the server did not start"
    handle = started[0]
    assert httpx.get(handle.base_url + "/models").json()["data"][0]["id"] == "tiny-qwen2"
    handle.server.should_exit = True
    thread.join(20)
    assert result == [0]
