"""A local OpenAI-compatible server over any of our LLM backends (FastAPI + uvicorn, loopback by default).

It makes a :class:`~agentrl.llm.transformers_backend.TransformersBackend` (a local
checkpoint, the embedded SmolLM2, a tiny test model) look like a vLLM server, so that anything
written against an OpenAI-compatible API, :class:`~agentrl.llm.OpenAICompatibleBackend`
included, can talk to it. Endpoints:

* ``GET /v1/models``: the one served model (``{"object": "list", "data": [{"id": NAME, ...}]}``).
* ``POST /v1/chat/completions``: ``messages``, ``max_tokens`` (or ``max_completion_tokens``),
  ``temperature``, ``top_p``, ``stop``, ``seed``, ``logprobs``/``top_logprobs``; answers
  ``choices[0].message.content``, ``finish_reason``, ``usage`` and, with ``logprobs: true``,
  ``choices[0].logprobs.content = [{"token", "logprob", "bytes", "top_logprobs": []}, ...]``
  (tokens are written ``"token_id:N"`` when ``return_tokens_as_token_ids`` is true, as vLLM does).
* ``POST /v1/completions``: token-in, as vLLM: ``prompt`` is a list of token ids (a string is
  tokenised without special tokens); answers ``choices[0].text``, ``finish_reason``, ``usage``
  and, when ``logprobs`` is set, ``choices[0].logprobs = {"tokens", "token_logprobs",
  "top_logprobs", "text_offset"}`` with ``"token_id:N"`` tokens when ``return_tokens_as_token_ids``
  is true.
* ``GET /health``: ``{"status": "ok", "model": NAME}``.

With a ``recorder`` (:func:`create_app`), the server is a *recording endpoint* for training an agent harness:
every completion call must name its episode, in the ``X-AgentRL-Episode`` header (:data:`EPISODE_HEADER`) or in
the request's ``user`` field, and the exact prompt ids, sampled ids and logprobs of each call are handed to the
recorder under that tag (a call without a tag, or with a tag the recorder does not know, gets HTTP 400).

The sampled tokens are exactly the backend's (its own sampling loop, its end-of-turn handling; a
final EOS token is among the returned tokens but never in the text), and concurrent requests are
batched by the backend's queue. Only ``n = 1``; ``top_logprobs`` alternatives are not computed (empty lists).
``stream=true`` answers with server-sent events in OpenAI's chunk format (``stream_options.include_usage`` adds
the usage chunk), but the reply is generated whole first and arrives as one content chunk: clients that only
stream (verifiers' interception, some agent SDKs) work, time to first token is the whole reply's. The ``model``
field of a request is not checked. Bad requests
get HTTP 400 with ``{"error": {"message", "type": "invalid_request_error", "param", "code"}}``.

Python::

    from agentrl.llm import smollm2_backend
    from agentrl.llm.server import serve_model

    with serve_model(smollm2_backend()) as server:  # port 0: a free port
        print(server.base_url)  # http://127.0.0.1:PORT/v1

Command line (blocks until Ctrl-C)::

    agentrl serve-model --model smollm2 --port 8000
    agentrl serve-model --model tiny
    agentrl serve-model --model /path/to/hf-checkpoint --device cuda --dtype bfloat16

Security (``docs/design/security.md``): loopback only unless ``allow_remote=True`` (``--allow-remote``), which
needs a token (``--token``: clients send it as their OpenAI API key, ``Authorization: Bearer <token>``); with a
token every route but ``/health`` needs it. Request bodies above ``max_request_bytes`` (8 MiB) answer 413
before they are parsed, and a prompt whose characters cannot fit the model's context (the longest token of the
vocabulary times the context) answers 400 before it is tokenised; tokenising runs off the event loop. Every
request passes :mod:`agentrl.serving.guard` first (``Host`` and ``Origin``, JSON bodies only, a body deadline,
a connection limit and a header timeout).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentrl.core.errors import AgentRLError
from agentrl.llm.base import BackendError, Generation, GenerationConfig
from agentrl.llm.tool_calls import ToolCallError, needs_tool_rendering, parse_tool_calls, render_tool_chat
from agentrl.serving.guard import check_token
from agentrl.serving.stack import (
    ServerHandle,
    ServingMiddleware,
    add_guard_arguments,
    check_bearer,
    guard_options,
    is_loopback,
    read_token,
    refuse_remote,
    start_server_thread,
)

__all__ = [
    "DEFAULT_PORT",
    "EPISODE_HEADER",
    "ChatCompletionRequest",
    "CompletionRequest",
    "ModelServer",
    "create_app",
    "load_backend",
    "main",
    "serve_model",
]

DEFAULT_PORT = 8000
"""The port of ``agentrl serve-model`` (vLLM's default)."""
EPISODE_HEADER = "X-AgentRL-Episode"
"""The header that tags a call with its episode on a recording endpoint (the ``user`` field works too)."""
DEFAULT_CHAT_MAX_TOKENS = 256
"""``max_tokens`` of a chat request that gives none."""
DEFAULT_COMPLETION_MAX_TOKENS = 16
"""``max_tokens`` of a completions request that gives none (OpenAI's and vLLM's default)."""
MAX_REQUEST_BYTES = 8 * 1024 * 1024
"""The largest request body :func:`serve_model` takes by default (a chat of a full context is a few hundred KB)."""
OPEN_ROUTES = frozenset({"/health"})
"""The routes that answer without the token."""


class _Message(BaseModel):
    """One chat message (``content`` may be a string or a list of ``{"type": "text", "text"}`` parts)."""

    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None


class _Sampling(BaseModel):
    """The sampling fields that chat and completions requests share."""

    model_config = ConfigDict(extra="allow")

    model: str | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float = Field(default=1.0, ge=0.0, le=2.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    stop: str | list[str] | None = None
    seed: int | None = None
    n: int = 1
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    return_tokens_as_token_ids: bool = False


class ChatCompletionRequest(_Sampling):
    """The body of ``POST /v1/chat/completions``."""

    user: str | None = None
    messages: list[_Message] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    max_completion_tokens: int | None = Field(default=None, ge=1)
    logprobs: bool = False
    top_logprobs: int | None = Field(default=None, ge=0, le=20)


class CompletionRequest(_Sampling):
    """The body of ``POST /v1/completions`` (``prompt``: token ids, or a string to tokenise)."""

    user: str | None = None
    prompt: list[int] | str
    logprobs: int | None = Field(default=None, ge=0, le=20)
    echo: bool = False


class _MalformedToolCall(AgentRLError):
    """The model's reply holds a tool call that cannot be parsed (a recording endpoint fails the episode)."""


class _BadRequest(AgentRLError):
    """A request the server refuses with HTTP 400 (``param`` names the offending field)."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


def _error_body(message: str, param: str | None = None, kind: str = "invalid_request_error") -> dict[str, Any]:
    """An OpenAI-style error object."""
    return {"error": {"message": message, "type": kind, "param": param, "code": None}}


def _stop(stop: str | list[str] | None) -> tuple[str, ...]:
    if stop is None:
        return ()
    items = [stop] if isinstance(stop, str) else list(stop)
    if len(items) > 4:
        raise _BadRequest("at most 4 stop sequences", "stop")
    return tuple(s for s in items if s)


def _config(req: _Sampling, max_tokens: int | None, default_max: int) -> GenerationConfig:
    """The :class:`GenerationConfig` of a request; :class:`_BadRequest` for what is not supported."""
    if req.n != 1:
        raise _BadRequest(f"only n=1 is supported, got n={req.n}", "n")
    return GenerationConfig(
        max_tokens=max_tokens if max_tokens is not None else default_max,
        temperature=req.temperature,
        top_p=req.top_p,
        stop=_stop(req.stop),
        seed=req.seed,
    )


def stream_chunks(response: dict[str, Any], include_usage: bool = False) -> list[dict[str, Any]]:
    """A whole completion ``response`` as the chunks of its ``stream=true`` answer, in OpenAI's format.

    One chunk carries the reply (the role, the content and any tool calls, with their ``index``; or the text of a
    completion), the next its ``finish_reason``; ``include_usage`` adds a last chunk with no choices and the usage.

    >>> message = {"role": "assistant", "content": "hi"}
    >>> choice = {"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}
    >>> reply = {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "m",
    ...          "usage": {"total_tokens": 3}, "choices": [choice]}
    >>> [c["choices"][0]["delta"] if c["choices"] else c["usage"] for c in stream_chunks(reply, include_usage=True)]
    [{'role': 'assistant', 'content': 'hi'}, {}, {'total_tokens': 3}]
    """
    chat = response["object"] == "chat.completion"
    head = {key: response[key] for key in ("id", "created", "model")}
    head["object"] = "chat.completion.chunk" if chat else "text_completion"
    choice = response["choices"][0]
    if chat:
        delta = dict(choice["message"])
        if delta.get("tool_calls"):
            delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(delta["tool_calls"])]
        first = {"index": 0, "delta": delta, "logprobs": choice["logprobs"], "finish_reason": None}
        last = {"index": 0, "delta": {}, "logprobs": None, "finish_reason": choice["finish_reason"]}
    else:
        first = {"index": 0, "text": choice["text"], "logprobs": choice["logprobs"], "finish_reason": None}
        last = {"index": 0, "text": "", "logprobs": None, "finish_reason": choice["finish_reason"]}
    chunks = [{**head, "choices": [first]}, {**head, "choices": [last]}]
    if include_usage:
        chunks.append({**head, "choices": [], "usage": response["usage"]})
    return chunks


def _text_content(message: _Message, index: int) -> str:
    """A message's text (text parts of a list content are joined)."""
    content = message.content
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for part in content:
        if part.get("type") != "text" or not isinstance(part.get("text"), str):
            raise _BadRequest(f"messages[{index}]: only text content parts are supported", "messages")
        parts.append(part["text"])
    return "".join(parts)


class _Tokens:
    """Token ids to strings with the backend's tokenizer (``token_id:N`` when it has none)."""

    def __init__(self, backend: Any) -> None:
        self.tokenizer = getattr(backend, "tokenizer", None)
        self.lock = getattr(backend, "_tokenizer_lock", None) or threading.Lock()

    def strings(self, ids: Sequence[int], as_ids: bool) -> list[str]:
        """One string per token id."""
        if as_ids or self.tokenizer is None:
            return [f"token_id:{i}" for i in ids]
        with self.lock:
            return [str(self.tokenizer.decode([i])) for i in ids]

    def encode(self, text: str) -> list[int]:
        """A string prompt as token ids (no special tokens added)."""
        if self.tokenizer is None:
            raise _BadRequest("this backend has no tokenizer: send the prompt as a list of token ids", "prompt")
        with self.lock:
            return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def vocab_size(self) -> int | None:
        """The tokenizer's size, when known."""
        return len(self.tokenizer) if self.tokenizer is not None else None

    def longest_token_chars(self) -> int | None:
        """An upper bound on the characters one token covers: the longest vocabulary entry (cached).

        A byte-level BPE entry has one symbol per byte, a SentencePiece entry one per character (its byte
        fallbacks are longer than the byte they stand for), so a text of more than ``context`` times this many
        characters has more than ``context`` tokens, whatever they are.
        """
        if self.tokenizer is None:
            return None
        cached = getattr(self, "_longest", None)
        if cached is None:
            with self.lock:
                vocab = self.tokenizer.get_vocab()
            cached = self._longest = max((len(entry) for entry in vocab), default=1) or 1
        return int(cached)


def _context_size(backend: Any) -> int | None:
    model = getattr(backend, "model", None)
    config = getattr(model, "config", None)
    value = getattr(config, "max_position_embeddings", None)
    return int(value) if value else None


def _usage(generation: Generation, prompt_tokens: int | None = None) -> dict[str, int]:
    prompt = generation.usage.get("prompt_tokens", prompt_tokens or len(generation.prompt_token_ids))
    completion = generation.usage.get("completion_tokens", len(generation.token_ids))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def create_app(
    backend: Any,
    model_name: str | None = None,
    recorder: Any = None,
    *,
    token: str | None = None,
    max_request_bytes: int = MAX_REQUEST_BYTES,
) -> Any:
    """An ASGI app serving ``backend`` (anything with ``agenerate``; ``agenerate_ids`` for token-in).

    A FastAPI app behind :class:`~agentrl.serving.stack.ServingMiddleware`: the body cap, the token and JSON bodies
    are checked there, before FastAPI parses anything.

    Args:
        backend: the LLM backend; it is not closed when the app stops.
        model_name: the id in ``/v1/models`` and in replies (``backend.name`` by default).
        recorder: makes this a recording endpoint: ``recorder.knows(tag)`` says whether an episode tag is open,
            ``recorder.sampling(config)`` may replace a call's sampling settings (a trainer samples at its own
            temperature, whatever the harness asks), and ``recorder.record(tag, messages, generation)`` takes
            each call (``messages`` is ``None`` for ``/v1/completions``); see :mod:`agentrl.rollout.recording`.
        token: the bearer token every route but ``/health`` needs (``None``: none needed).
        max_request_bytes: bodies above this answer 413 before they are parsed.
    """
    import anyio.to_thread
    from fastapi import FastAPI, Header, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, StreamingResponse
    from starlette.exceptions import HTTPException as StarletteHTTPException

    name = model_name or getattr(backend, "name", None) or type(backend).__name__
    created = int(time.time())
    tokens = _Tokens(backend)
    context = _context_size(backend)
    app = FastAPI(title="AgentRL OpenAI-compatible model server")
    counter = iter(range(1, 2**62))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        param = None
        for error in exc.errors():
            where = ".".join(str(p) for p in error.get("loc", ()) if p != "body")
            param = param or (where.split(".")[0] if where else None)
            problems.append(f"{where or 'body'}: {error.get('msg')}")
        return JSONResponse(_error_body("invalid request: " + "; ".join(problems), param), status_code=400)

    @app.exception_handler(_BadRequest)
    async def _bad(request: Request, exc: _BadRequest) -> JSONResponse:
        return JSONResponse(_error_body(str(exc), exc.param), status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
        return JSONResponse(_error_body(str(exc.detail), kind=kind), status_code=exc.status_code)

    @app.exception_handler(_MalformedToolCall)
    async def _malformed(request: Request, exc: _MalformedToolCall) -> JSONResponse:
        return JSONResponse(_error_body(str(exc), "tools", kind="invalid_response_error"), status_code=422)

    @app.exception_handler(BackendError)
    async def _backend_failed(request: Request, exc: BackendError) -> JSONResponse:
        return JSONResponse(_error_body(str(exc), kind="server_error"), status_code=500)

    def episode_tag(header: str | None, body: Any) -> str | None:
        """The call's episode on a recording endpoint (None when not recording); 400 when it has none."""
        if recorder is None:
            return None
        tag = header or body.user
        if not tag:
            raise _BadRequest(
                f"this endpoint records calls for training, and each call needs its episode: send the {EPISODE_HEADER} "
                "header or the user field (use the client the harness is handed, which sets the header)",
                "user",
            )
        if not recorder.knows(tag):
            raise _BadRequest(f"unknown episode {tag!r}: it was never opened, or it has ended", "user")
        return str(tag)

    def check_prompt(n_tokens: int) -> None:
        if context is not None and n_tokens >= context:
            raise _BadRequest(f"the prompt has {n_tokens} tokens; the model's context is {context} tokens", "messages")

    def check_chars(n_chars: int, param: str) -> None:
        """Refuse, before tokenising, a text too long to fit the context whatever its tokens."""
        longest = tokens.longest_token_chars()
        if context is not None and longest is not None and n_chars > context * longest:
            raise _BadRequest(
                f"the prompt has {n_chars} characters, more than the model's context of {context} tokens can hold "
                f"(at most {longest} characters a token)", param
            )

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "model": name}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        entry: dict[str, Any] = {"id": name, "object": "model", "created": created, "owned_by": "agentrl"}
        if context is not None:
            entry["max_model_len"] = context
        return {"object": "list", "data": [entry]}

    def answer(req: _Sampling, response: dict[str, Any]) -> Any:
        """The reply as JSON, or as server-sent events when the request streams."""
        if not req.stream:
            return response
        include_usage = bool((req.stream_options or {}).get("include_usage"))
        lines = [f"data: {json.dumps(chunk)}\n\n" for chunk in stream_chunks(response, include_usage)]
        return StreamingResponse(iter([*lines, "data: [DONE]\n\n"]), media_type="text/event-stream")

    @app.post("/v1/chat/completions")
    async def chat(req: ChatCompletionRequest, episode: str | None = Header(default=None, alias=EPISODE_HEADER)) -> Any:
        return answer(req, await chat_reply(req, episode))

    @app.post("/v1/completions")
    async def completions(
        req: CompletionRequest, episode: str | None = Header(default=None, alias=EPISODE_HEADER)
    ) -> Any:
        return answer(req, await completion_reply(req, episode))

    async def chat_reply(req: ChatCompletionRequest, episode: str | None) -> dict[str, Any]:
        tag = episode_tag(episode, req)
        config = _config(req, req.max_completion_tokens or req.max_tokens, DEFAULT_CHAT_MAX_TOKENS)
        if tag is not None:
            config = recorder.sampling(config)
        history = [m.model_dump(exclude_none=True) for m in req.messages]
        check_chars(len(json.dumps(history)) + len(json.dumps(req.tools or [])), "messages")
        if needs_tool_rendering(history, req.tools):
            return await tool_chat(req, history, config, tag)
        messages = [{"role": m.role, "content": _text_content(m, i)} for i, m in enumerate(req.messages)]
        encode = getattr(backend, "encode_prompt", None)
        prompt_tokens = None
        if callable(encode):
            try:  # in a worker thread: a long prompt must not stall every other request
                prompt_tokens = len(await anyio.to_thread.run_sync(encode, messages))
            except Exception as exc:  # a template that rejects the roles, for instance
                raise _BadRequest(f"cannot apply the chat template: {exc}", "messages") from None
            check_prompt(prompt_tokens)
        generation = await backend.agenerate(messages, config)
        if tag is not None:
            recorder.record(tag, messages, generation)
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": generation.text},
            "finish_reason": generation.finish_reason,
            "logprobs": None,
        }
        if req.logprobs:
            strings = tokens.strings(generation.token_ids, req.return_tokens_as_token_ids)
            choice["logprobs"] = {
                "content": [
                    {"token": s, "logprob": lp, "bytes": list(s.encode("utf-8")), "top_logprobs": []}
                    for s, lp in zip(strings, generation.logprobs, strict=False)
                ]
            }
        return {
            "id": f"chatcmpl-{next(counter)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": name,
            "choices": [choice],
            "usage": _usage(generation, prompt_tokens),
        }

    async def tool_chat(
        req: ChatCompletionRequest, history: list[dict[str, Any]], config: GenerationConfig, tag: str | None
    ) -> dict[str, Any]:
        """A chat request with function calling: the template renders the tools, the reply is parsed back."""
        generate_ids = getattr(backend, "agenerate_ids", None)
        if tokens.tokenizer is None or not callable(generate_ids):
            raise _BadRequest(f"function calling needs a local model with a tokenizer; {name} has none", "tools")
        try:
            with tokens.lock:
                text = render_tool_chat(tokens.tokenizer, history, req.tools)
        except Exception as exc:  # a template that rejects the roles, arguments that are not JSON objects
            raise _BadRequest(f"cannot render the conversation with its tools: {exc}", "messages") from None
        ids = await anyio.to_thread.run_sync(tokens.encode, text)
        check_prompt(len(ids))
        generation = await generate_ids(ids, config)
        if tag is not None:
            recorder.record(tag, history, generation)
        try:
            content, calls = parse_tool_calls(generation.text)
        except ToolCallError as exc:
            if tag is None:
                content, calls = generation.text, []  # as vLLM: an unparsable call stays text
            else:
                recorder.fail(tag, f"the model's tool call is malformed: {exc}")
                raise _MalformedToolCall(f"the model's tool call is malformed: {exc}") from None
        message: dict[str, Any] = {"role": "assistant", "content": content or (None if calls else "")}
        if calls:
            message["tool_calls"] = calls
        choice: dict[str, Any] = {
            "index": 0,
            "message": message,
            "finish_reason": "tool_calls" if calls else generation.finish_reason,
            "logprobs": None,
        }
        if req.logprobs:
            strings = tokens.strings(generation.token_ids, req.return_tokens_as_token_ids)
            choice["logprobs"] = {
                "content": [
                    {"token": s, "logprob": lp, "bytes": list(s.encode("utf-8")), "top_logprobs": []}
                    for s, lp in zip(strings, generation.logprobs, strict=False)
                ]
            }
        return {
            "id": f"chatcmpl-{next(counter)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": name,
            "choices": [choice],
            "usage": _usage(generation, len(ids)),
        }

    async def completion_reply(req: CompletionRequest, episode: str | None) -> dict[str, Any]:
        tag = episode_tag(episode, req)
        config = _config(req, req.max_tokens, DEFAULT_COMPLETION_MAX_TOKENS)
        if tag is not None:
            config = recorder.sampling(config)
        if req.echo:
            raise _BadRequest("echo is not supported", "echo")
        generate_ids = getattr(backend, "agenerate_ids", None)
        if not callable(generate_ids):
            raise _BadRequest(f"the {name} backend does not generate from token ids", "prompt")
        if isinstance(req.prompt, str):
            check_chars(len(req.prompt), "prompt")
            ids = await anyio.to_thread.run_sync(tokens.encode, req.prompt)
        else:
            ids = list(req.prompt)
        if not ids:
            raise _BadRequest("the prompt is empty", "prompt")
        vocab = tokens.vocab_size()
        bad = next((i for i in ids if i < 0 or (vocab is not None and i >= vocab)), None)
        if bad is not None:
            raise _BadRequest(f"prompt token id {bad} is outside the vocabulary [0, {vocab})", "prompt")
        check_prompt(len(ids))
        try:
            generation = await generate_ids(ids, config)
        except ValueError as exc:
            raise _BadRequest(str(exc), "prompt") from None
        if tag is not None:
            recorder.record(tag, None, generation)
        choice: dict[str, Any] = {
            "index": 0,
            "text": generation.text,
            "finish_reason": generation.finish_reason,
            "logprobs": None,
        }
        if req.logprobs is not None:
            strings = tokens.strings(generation.token_ids, req.return_tokens_as_token_ids)
            offsets, position = [], 0
            for s in strings:
                offsets.append(position)
                position += 0 if req.return_tokens_as_token_ids else len(s)
            choice["logprobs"] = {
                "tokens": strings,
                "token_logprobs": list(generation.logprobs),
                "top_logprobs": [{} for _ in strings] if req.logprobs else None,
                "text_offset": offsets,
            }
        return {
            "id": f"cmpl-{next(counter)}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": name,
            "choices": [choice],
            "usage": _usage(generation, len(ids)),
        }

    def authenticate(header: str | None, path: str) -> None:
        if token is not None and path not in OPEN_ROUTES:
            check_bearer(header, {token: None})

    return ServingMiddleware(
        app,
        error_body=lambda status, message: _error_body(message, kind=_KINDS.get(status, "invalid_request_error")),
        authenticate=authenticate,
        max_request_bytes=max_request_bytes,
    )


_KINDS = {401: "authentication_error", 403: "permission_error", 404: "not_found_error", 500: "server_error"}


class ModelServer(ServerHandle):
    """A running :func:`serve_model` server: uvicorn in a daemon thread (:mod:`agentrl.serving.stack`).

    Attributes:
        url: the server's root, ``http://HOST:PORT``.
        base_url: the API root to give an OpenAI client, ``http://HOST:PORT/v1``.
        model: the served model's id.
        backend: the backend it serves (the caller still owns it).
    """

    def __init__(self, *args: Any, model: str = "", backend: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.model = model
        self.backend = backend

    @property
    def base_url(self) -> str:
        """The API root for an OpenAI client."""
        return self.url + "/v1"

    def __enter__(self) -> ModelServer:
        return self


def serve_model(
    backend: Any,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    model_name: str | None = None,
    allow_remote: bool = False,
    timeout_s: float = 10.0,
    recorder: Any = None,
    token: str | None = None,
    max_request_bytes: int = MAX_REQUEST_BYTES,
    **guard: Any,
) -> ModelServer:
    """Serve ``backend`` over an OpenAI-compatible API in a background thread and return the handle.

    Args:
        backend: an LLM backend (``TransformersBackend``, ``smollm2_backend()``...); the caller
            still owns it and closes it after :meth:`ModelServer.stop`.
        host: the address to bind; loopback only unless ``allow_remote``.
        port: the port; 0 picks a free one (see :attr:`ModelServer.url`).
        model_name: the model id clients see (``backend.name`` by default).
        allow_remote: allow a non-loopback ``host`` (it then needs a ``token``).
        timeout_s: how long to wait for the server to start.
        recorder: serve a recording endpoint (see :func:`create_app`).
        token: the bearer token (an OpenAI client's ``api_key``) every route but ``/health`` needs.
        max_request_bytes: bodies above this answer 413.
        guard: :func:`~agentrl.serving.stack.start_server_thread`'s guard options (``allowed_hosts``,
            ``allowed_origins``, ``max_connections``, ``header_timeout_s``).

    Raises:
        ValueError: a non-loopback host without ``allow_remote`` and a token (of at least 16 characters).
        OSError: the address cannot be bound (the port is taken, for instance).
        RuntimeError: the server did not start.
        DependencyNotInstalled: fastapi or uvicorn is missing.
    """
    refuse_remote(host, allow_remote, "model server")
    if not token and not is_loopback(host):
        raise ValueError(f"refusing to serve a model on {host!r} without authentication: give a token (--token)")
    check_token(token, host, server="model server")
    try:
        import uvicorn  # noqa: F401  (checked here to raise with the install command)
    except ImportError as exc:
        from agentrl.core.errors import DependencyNotInstalled

        raise DependencyNotInstalled("fastapi and uvicorn", extra="llm") from exc
    name = model_name or getattr(backend, "name", None) or type(backend).__name__
    app = create_app(backend, name, recorder=recorder, token=token, max_request_bytes=max_request_bytes)
    return start_server_thread(
        app, host, port, timeout_s, name="agentrl-model-server", handle_class=ModelServer, model=name, backend=backend,
        error_body=lambda status, message: _error_body(message, kind=_KINDS.get(status, "invalid_request_error")),
        **guard,
    )


def load_backend(model: str, **options: Any) -> Any:
    """A :class:`TransformersBackend` for ``"tiny"``, ``"tiny-llama"``, ``"smollm2"`` or a model folder.

    Tiny models are built (once) under ``$AGENTRL_CACHE`` (``~/.cache/agentrl``); ``options`` go to
    the backend (``device``, ``dtype``, ``max_batch_size``, ``name``).
    """
    from agentrl.llm.transformers_backend import TransformersBackend

    if model in ("tiny", "tiny-qwen2", "tiny-llama"):
        from agentrl.llm.smollm2 import default_cache_dir
        from agentrl.llm.tiny import build_tiny_model

        family = "llama" if model == "tiny-llama" else "qwen2"
        options.setdefault("name", f"tiny-{family}")
        path = build_tiny_model(default_cache_dir() / f"tiny-{family}", family=family)  # type: ignore[arg-type]
        return TransformersBackend(path, **options)
    if model in ("smollm2", "SmolLM2-135M-Instruct"):
        from agentrl.llm.smollm2 import smollm2_backend

        return smollm2_backend(**options)
    return TransformersBackend(model, **options)


def main(argv: Sequence[str] | None = None) -> int:
    """``agentrl serve-model``: load the model and serve it until interrupted. Returns an exit status."""
    parser = argparse.ArgumentParser(
        prog="agentrl serve-model",
        description="Serve a local model over an OpenAI-compatible API (/v1/chat/completions, token-in "
        "/v1/completions, /v1/models), like a small vLLM.",
    )
    parser.add_argument("--model", default="smollm2", help="tiny, tiny-llama, smollm2 or a model folder")
    parser.add_argument("--name", help="the model id clients send and see (default: the model's name)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}; 0 picks one")
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N or auto")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--max-batch-size", type=int, default=8, help="requests generated together")
    parser.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host (needs --token)")
    parser.add_argument(
        "--token",
        help="the bearer token clients send (their OpenAI api_key); @FILE reads it from FILE (default: none)",
    )
    parser.add_argument(
        "--max-request-bytes", type=int, default=MAX_REQUEST_BYTES,
        help=f"larger request bodies answer 413 (default {MAX_REQUEST_BYTES})",
    )
    add_guard_arguments(parser)
    args = parser.parse_args(list(argv) if argv is not None else None)

    try:
        token = read_token(args.token)
        refuse_remote(args.host, args.allow_remote, "model server")
        if args.allow_remote and not token:
            raise ValueError("--allow-remote needs --token: the model server would serve anyone who reaches it")
        check_token(token, args.host, server="model server")
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    options: dict[str, Any] = {"device": args.device, "dtype": args.dtype, "max_batch_size": args.max_batch_size}
    try:
        backend = load_backend(args.model, **options)
    except (OSError, ValueError) as exc:
        print(f"error: cannot load model {args.model!r}: {exc}", file=sys.stderr)
        return 2
    try:
        try:
            server = serve_model(
                backend, args.host, args.port, model_name=args.name, allow_remote=args.allow_remote, token=token,
                max_request_bytes=args.max_request_bytes, **guard_options(args),
            )
        except (RuntimeError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"agentrl-model-server: {server.base_url}", flush=True)
        print(f"serving {server.model} at {server.base_url} (Ctrl-C to stop)", file=sys.stderr, flush=True)
        if token:
            print("  clients send 'Authorization: Bearer <token>' (their api_key)", file=sys.stderr, flush=True)
        else:
            print("  WITHOUT a token: any local user can generate (--token adds one)", file=sys.stderr, flush=True)
        try:
            while server.thread.is_alive():
                server.thread.join(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            server.stop()
    finally:
        backend.close()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
