"""Any OpenAI-compatible ``/chat/completions`` server: OpenAI, vLLM, SGLang, llama.cpp, Ollama, TGI...

Token-in generation (exact prompt token ids in, exact sampled token ids and logprobs out) goes to
the sibling ``/completions`` endpoint of a vLLM/SGLang-style server.

All requests, whatever thread or event loop they come from, run on one private event loop in a
background thread with one ``httpx.AsyncClient``: an ``httpx`` client (and an ``asyncio``
semaphore) belongs to the loop it was first used on, and funnelling everything through one loop
also makes ``max_concurrency`` a limit for the whole backend rather than per caller.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import email.utils
import io
import json
import math
import operator
import os
import random
import re
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

from agentrl.core.errors import AgentRLError, DependencyNotInstalled
from agentrl.llm.base import BackendError, ChatMessage, Generation, GenerationConfig

__all__ = ["OpenAICompatibleBackend"]

_T = TypeVar("_T")

# vLLM writes sampled tokens as "token_id:123" when asked for return_tokens_as_token_ids.
_TOKEN_ID = re.compile(r"^token_id:(\d+)$")


class _Retryable(AgentRLError):
    """One failed attempt that may succeed if tried again; carries the description and a delay hint."""

    def __init__(self, message: str, retry_after: float | None = None, malformed: bool = False) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.malformed = malformed


def _chat_url(base_url: str) -> str:
    url = base_url.rstrip("/")
    if url.endswith("/chat/completions"):
        return url
    if urlsplit(url).path in ("", "/"):
        url += "/v1"  # a bare server address: OpenAI-compatible servers mount the API at /v1
    return url + "/chat/completions"


def _completions_url(base_url: str) -> str:
    """The ``/completions`` URL for ``base_url``, derived as :func:`_chat_url` derives the chat URL."""
    url = base_url.rstrip("/")
    if url.endswith("/chat/completions"):
        return url.removesuffix("/chat/completions") + "/completions"
    if url.endswith("/completions"):
        return url
    if urlsplit(url).path in ("", "/"):
        url += "/v1"
    return url + "/completions"


def _check_prompt_ids(prompt_ids: Any) -> list[int]:
    """``prompt_ids`` as a list of ints; ValueError unless it is a non-empty sequence of non-negative ints."""
    what = "prompt_ids must be a non-empty sequence of non-negative ints"
    items: Any = prompt_ids
    if not isinstance(items, Sequence) and callable(getattr(items, "tolist", None)):
        items = items.tolist()  # a 1-D numpy array or torch tensor
    if isinstance(items, (str, bytes, bytearray)) or not isinstance(items, Sequence):
        raise ValueError(f"{what}, got {type(prompt_ids).__name__} {prompt_ids!r:.100}")
    ids: list[int] = []
    for i, token in enumerate(items):
        try:
            if isinstance(token, bool):
                raise TypeError
            value = operator.index(token)  # int, numpy or torch integer scalars; not floats
        except TypeError:
            raise ValueError(f"{what}, got prompt_ids[{i}] = {token!r:.50} ({type(token).__name__})") from None
        if value < 0:
            raise ValueError(f"{what}, got prompt_ids[{i}] = {value}")
        ids.append(value)
    if not ids:
        raise ValueError(f"{what}, got an empty {type(prompt_ids).__name__}")
    return ids


def _image_data_url(image: Any, where: str) -> str:
    """An ``(H, W, 3)`` uint8 numpy image as a PNG ``data:`` URL; ValueError naming ``where`` for anything else."""
    import numpy as np

    if not isinstance(image, np.ndarray) or image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        got = (
            f"a {image.dtype} array of shape {image.shape}"
            if isinstance(image, np.ndarray)
            else f"{type(image).__name__} {image!r:.60}"
        )
        raise ValueError(f"{where}: an image part must be a numpy uint8 array of shape (H, W, 3), got {got}")
    if image.shape[0] == 0 or image.shape[1] == 0:
        raise ValueError(f"{where}: an image part must be a non-empty (H, W, 3) uint8 array, got shape {image.shape}")
    try:
        from PIL import Image
    except ImportError as exc:
        raise DependencyNotInstalled("pillow", extra="browser") from exc
    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(image)).save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _openai_content(content: Any, index: int) -> Any:
    """A message's ``content`` in OpenAI's form: a str as is; parts with ``"image"`` parts as ``image_url`` parts.

    ``{"type": "text", "text": str}`` parts are sent as they are, ``{"type": "image", "image": array}`` parts
    as ``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}``; parts already in
    OpenAI's form (``image_url``) pass through unchanged.
    """
    if isinstance(content, str) or content is None:
        return content
    if not isinstance(content, (list, tuple)):
        raise ValueError(f"messages[{index}].content must be a str or a list of parts, got {type(content).__name__}")
    parts: list[Any] = []
    for j, part in enumerate(content):
        where = f"messages[{index}].content[{j}]"
        if not isinstance(part, dict):
            raise ValueError(f"{where} must be a dict part, got {type(part).__name__}")
        kind = part.get("type")
        if kind == "text":
            parts.append({"type": "text", "text": str(part.get("text", ""))})
        elif kind == "image":
            parts.append({"type": "image_url", "image_url": {"url": _image_data_url(part.get("image"), where)}})
        else:
            parts.append(part)
    return parts


def _parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds or an HTTP date); None when absent or bad."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    return max(0.0, seconds) if math.isfinite(seconds) else None


class OpenAICompatibleBackend:
    """Chat through an OpenAI-compatible HTTP server, with retries, backoff and a concurrency limit.

    Requests go to ``{base_url}/chat/completions``. ``base_url`` is normally the API root, e.g.
    ``"http://127.0.0.1:8000/v1"`` or ``"https://api.openai.com/v1"``; a bare server address
    without a path (``"http://127.0.0.1:8000"``) gets ``/v1`` appended, and a URL already ending
    in ``/chat/completions`` is used as is. Any other path is kept unchanged.

    The API key is read from the environment variable ``api_key_env`` at each call (so it can be
    rotated, and never sits in this object) and sent as ``Authorization: Bearer``; without it no
    header is sent (local servers need none). It never appears in :meth:`config` or in errors.

    Failures: connection errors, timeouts (``timeout_s`` per attempt), HTTP 429 and 5xx are
    retried up to ``max_retries`` times with exponential backoff (``backoff_s * 2**attempt``, with
    jitter, at most ``max_backoff_s``), or after the server's ``Retry-After`` (capped at
    ``max_backoff_s``). Other 4xx fail at once. A reply that is not the expected JSON is retried
    once. When the attempts run out, :class:`BackendError` names the URL and the last problem
    (with the first 200 characters of the reply body).

    Token ids are unknown to this API (``token_ids`` is empty) unless the server writes tokens as
    ``token_id:N`` (vLLM with ``extra_body={"return_tokens_as_token_ids": True}`` and
    ``logprobs=True``); ``logprobs`` are filled when ``logprobs=True`` and the server returns them.

    Token-in generation for RL rollouts: :meth:`generate_ids` and :meth:`agenerate_ids` send exact
    prompt token ids to ``{base_url}/completions`` (the sibling of the chat URL: a ``base_url``
    ending in ``/chat/completions`` maps to ``.../completions``) and return the exact sampled token
    ids with their logprobs. They need a server that honours vLLM's
    ``return_tokens_as_token_ids`` (vLLM, SGLang); they share the retries, timeouts, concurrency
    limit and key handling of chat requests.

    Args:
        base_url: the API root (see above).
        model: the model name the server expects.
        api_key_env: the environment variable holding the API key.
        max_concurrency: the most requests in flight at once, over all callers.
        timeout_s: the time limit of one attempt.
        max_retries: retries after the first attempt.
        backoff_s: the first backoff delay; doubles with each retry.
        extra_body: more JSON fields for every request (e.g. ``{"top_k": 20}``); they override
            the standard ones. Recorded in :meth:`config`, so keep secrets out of it.
        logprobs: ask for the logprob of each generated token.
        max_backoff_s: the longest wait between attempts, ``Retry-After`` included.
        name: a display name (the model name by default).

    Raises:
        DependencyNotInstalled: httpx is missing.
        ValueError: bad limits.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        max_concurrency: int = 8,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        extra_body: dict[str, Any] | None = None,
        logprobs: bool = False,
        max_backoff_s: float = 30.0,
        name: str | None = None,
    ) -> None:
        try:
            import httpx
        except ImportError as exc:
            raise DependencyNotInstalled("httpx", extra="llm") from exc
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        if max_retries < 0 or timeout_s <= 0 or backoff_s < 0 or max_backoff_s < 0:
            raise ValueError("max_retries, backoff_s and max_backoff_s must be >= 0 and timeout_s > 0")
        self._httpx = httpx
        self.base_url = base_url
        self.url = _chat_url(base_url)
        self.completions_url = _completions_url(base_url)
        self.model = model
        self.name = name or model
        self.api_key_env = api_key_env
        self.max_concurrency = int(max_concurrency)
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.max_backoff_s = float(max_backoff_s)
        self.extra_body = dict(extra_body or {})
        self.logprobs = bool(logprobs)
        #: Counters: requests answered, HTTP attempts made, retries, requests that failed.
        self.stats: dict[str, int] = {"requests": 0, "attempts": 0, "retries": 0, "failures": 0}

        self._lock = threading.Lock()
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._client: Any = None  # httpx.AsyncClient, made on the private loop
        self._semaphore: asyncio.Semaphore | None = None

    # ------------------------------------------------------------------ public API

    def generate(self, messages: Sequence[ChatMessage], config: GenerationConfig) -> Generation:
        """Complete one conversation; blocks (the request runs on the backend's private event loop).

        A message's ``content`` is a str or a list of parts: ``{"type": "text", "text": str}`` and
        ``{"type": "image", "image": array}`` (a numpy uint8 array of shape (H, W, 3)), which is sent
        as OpenAI's ``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}``
        (a PNG, needs Pillow). Parts already in OpenAI's form pass through unchanged.

        Raises:
            ValueError: an image part is not an (H, W, 3) uint8 array, or a part is not a dict.
            BackendError: the request failed after its retries, or the backend is closed.
        """
        return self._wait("generate", self._complete(self.url, self._body(messages, config), self._parse))

    async def agenerate(self, messages: Sequence[ChatMessage], config: GenerationConfig) -> Generation:
        """Complete one conversation without blocking; safe from any event loop and thread.

        Messages as in :meth:`generate` (str content or text and image parts).

        Raises:
            ValueError: an image part is not an (H, W, 3) uint8 array, or a part is not a dict.
            BackendError: the request failed after its retries, or the backend is closed.
        """
        return await self._await(self._complete(self.url, self._body(messages, config), self._parse))

    def generate_ids(self, prompt_ids: Sequence[int], config: GenerationConfig) -> Generation:
        """Continue exact prompt token ids; blocks (the request runs on the backend's private event loop).

        POSTs ``{"model", "prompt": [ids...], "max_tokens", "temperature", "top_p", "stop", "seed",
        "logprobs": 1, "return_tokens_as_token_ids": true}`` (plus ``extra_body``) to
        :attr:`completions_url`, with the retries, timeout and concurrency limit of :meth:`generate`.

        Args:
            prompt_ids: the prompt as token ids of the server's tokenizer (a list, tuple or 1-D
                integer array), sent as they are: no chat template is applied.
            config: the sampling settings.

        Returns:
            A :class:`Generation` with ``prompt_token_ids`` = ``prompt_ids``, and ``token_ids`` and
            ``logprobs`` of equal length as the server sampled them (the server decides whether a
            final EOS token is among them; the text never contains it).

        Raises:
            ValueError: ``prompt_ids`` is not a non-empty sequence of non-negative ints.
            BackendError: the request failed after its retries, the backend is closed, or the
                server did not return token ids (it ignores ``return_tokens_as_token_ids``).
        """
        ids = _check_prompt_ids(prompt_ids)
        request = self._complete(self.completions_url, self._ids_body(ids, config), self._parse_ids(ids))
        return self._wait("generate_ids", request)

    async def agenerate_ids(self, prompt_ids: Sequence[int], config: GenerationConfig) -> Generation:
        """Continue exact prompt token ids without blocking; safe from any event loop and thread.

        The coroutine twin of :meth:`generate_ids`; concurrent calls share the backend's
        ``max_concurrency`` limit with chat requests.

        Args:
            prompt_ids: the prompt as token ids of the server's tokenizer (see :meth:`generate_ids`).
            config: the sampling settings.

        Returns:
            A :class:`Generation` with ``prompt_token_ids``, ``token_ids`` and ``logprobs`` filled.

        Raises:
            ValueError: ``prompt_ids`` is not a non-empty sequence of non-negative ints.
            BackendError: the request failed after its retries, the backend is closed, or the
                server did not return token ids.
        """
        ids = _check_prompt_ids(prompt_ids)
        return await self._await(
            self._complete(self.completions_url, self._ids_body(ids, config), self._parse_ids(ids))
        )

    def count_tokens(self, messages: Sequence[ChatMessage]) -> int:
        """An *estimate* of the prompt tokens: about 4 characters a token plus 4 tokens a message.

        Content given as parts (vision messages) counts its text parts, and 765 tokens per image
        (``image`` or ``image_url`` part; OpenAI's cost of a high-detail 512x512 tile set). The
        server's tokenizer is unknown here; use the ``usage`` of a reply for exact counts.
        """
        total = 2
        for message in messages:
            content: Any = message["content"]
            if isinstance(content, str):
                total += 4 + math.ceil(len(content) / 4)
                continue
            total += 4
            for part in content or ():
                if isinstance(part, dict) and part.get("type") == "text":
                    total += math.ceil(len(str(part.get("text", ""))) / 4)
                elif isinstance(part, dict) and part.get("type") in ("image_url", "image"):
                    total += 765
        return total

    def config(self) -> dict[str, Any]:
        """A JSON-serialisable description for result files (never the API key)."""
        return {
            "backend": "openai_compatible",
            "name": self.name,
            "model": self.model,
            "base_url": self.base_url,
            "url": self.url,
            "completions_url": self.completions_url,
            "api_key_env": self.api_key_env,
            "max_concurrency": self.max_concurrency,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "backoff_s": self.backoff_s,
            "max_backoff_s": self.max_backoff_s,
            "logprobs": self.logprobs,
            "extra_body": self.extra_body,
        }

    def close(self) -> None:
        """Close the HTTP client and stop the private event loop; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if self._client is not None:
            try:
                asyncio.run_coroutine_threadsafe(self._client.aclose(), loop).result(timeout=5)
            except Exception:
                pass  # best effort: the loop and its sockets go away below anyway
        loop.call_soon_threadsafe(loop.stop)
        if thread is not threading.current_thread():
            thread.join(timeout=5)

    def __enter__(self) -> OpenAICompatibleBackend:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ private event loop

    def _wait(self, method: str, coro: Coroutine[Any, Any, Generation]) -> Generation:
        """Run ``coro`` on the private loop and block for its result (``method`` names the caller in errors)."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise BackendError(f"{self.name}: {method}() called from the backend's own event loop")
        try:
            return self._run(coro).result()
        except concurrent.futures.CancelledError:
            if self._closed:  # close() cancelled the request
                raise BackendError(f"{self.name}: backend closed") from None
            raise

    async def _await(self, coro: Coroutine[Any, Any, Generation]) -> Generation:
        """Run ``coro`` on the private loop and await its result from the caller's loop."""
        try:
            return await asyncio.wrap_future(self._run(coro))
        except asyncio.CancelledError:
            if self._closed:  # close() cancelled the request, not our caller
                raise BackendError(f"{self.name}: backend closed") from None
            raise

    def _run(self, coro: Coroutine[Any, Any, _T]) -> concurrent.futures.Future[_T]:
        with self._lock:
            if self._closed:
                coro.close()
                raise BackendError(f"{self.name}: backend closed")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()
                thread = threading.Thread(
                    target=self._loop_main, args=(loop, ready), name=f"agentrl-http-{self.name}", daemon=True
                )
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
            return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def _loop_main(self, loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(ready.set)
        try:
            loop.run_forever()
        finally:
            # Cancel whatever is still pending so that waiting callers get an answer.
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()

    # ------------------------------------------------------------------ requests

    def _sampling_body(self, config: GenerationConfig) -> dict[str, Any]:
        """The fields a chat and a completions request share: model and sampling settings."""
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": config.max_tokens,
            "temperature": config.temperature,
            "top_p": config.top_p,
        }
        if config.stop:
            body["stop"] = list(config.stop)
        if config.seed is not None:
            body["seed"] = config.seed
        return body

    def _body(self, messages: Sequence[ChatMessage], config: GenerationConfig) -> dict[str, Any]:
        body = self._sampling_body(config)
        body["messages"] = [
            {"role": m["role"], "content": _openai_content(m["content"], i)} for i, m in enumerate(messages)
        ]
        if self.logprobs:
            body["logprobs"] = True
        body.update(self.extra_body)
        return body

    def _ids_body(self, prompt_ids: list[int], config: GenerationConfig) -> dict[str, Any]:
        body = self._sampling_body(config)
        body.update(self.extra_body)
        # Token-level rollouts need these whatever extra_body says (it may hold chat-style values).
        body["prompt"] = prompt_ids
        body["logprobs"] = 1
        body["return_tokens_as_token_ids"] = True
        return body

    async def _complete(self, url: str, body: dict[str, Any], parse: Callable[[Any], Generation]) -> Generation:
        if self._client is None:
            httpx = self._httpx
            limits = httpx.Limits(max_connections=self.max_concurrency, max_keepalive_connections=self.max_concurrency)
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout_s), limits=limits)
            self._semaphore = asyncio.Semaphore(self.max_concurrency)
        try:
            generation = await self._post_with_retries(url, body, parse)
        except BackendError:
            self.stats["failures"] += 1
            raise
        self.stats["requests"] += 1
        return generation

    async def _post_with_retries(
        self, url: str, body: dict[str, Any], parse: Callable[[Any], Generation]
    ) -> Generation:
        attempts = self.max_retries + 1
        malformed_retried = False
        last_problem = "no attempt made"
        for attempt in range(attempts):
            key = os.environ.get(self.api_key_env) or None
            try:
                return await self._attempt(url, body, key, parse)
            except _Retryable as exc:
                last_problem = self._redact(str(exc), key)
                if exc.malformed:
                    if malformed_retried:
                        break
                    malformed_retried = True
                if attempt == attempts - 1:
                    break
                self.stats["retries"] += 1
                if exc.retry_after is not None:
                    delay = min(exc.retry_after, self.max_backoff_s)
                else:
                    # Jitter spreads the retries of many concurrent callers so they do not stampede.
                    delay = min(self.backoff_s * 2**attempt, self.max_backoff_s) * random.uniform(0.5, 1.0)
                await asyncio.sleep(delay)
        tries = attempt + 1
        raise BackendError(f"{url}: failed after {tries} attempt{'s' if tries > 1 else ''}: {last_problem}")

    def _redact(self, text: str, key: str | None) -> str:
        return text.replace(key, "***") if key else text

    async def _attempt(
        self, url: str, body: dict[str, Any], key: str | None, parse: Callable[[Any], Generation]
    ) -> Generation:
        httpx = self._httpx
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        assert self._semaphore is not None
        async with self._semaphore:
            self.stats["attempts"] += 1
            try:
                # wait_for bounds the whole attempt; httpx's timeout alone bounds each read separately.
                response = await asyncio.wait_for(
                    self._client.post(url, json=body, headers=headers), timeout=self.timeout_s
                )
            except (asyncio.TimeoutError, httpx.TimeoutException) as exc:
                raise _Retryable(f"timed out after {self.timeout_s:g} s") from exc
            except httpx.TransportError as exc:
                raise _Retryable(f"connection error: {type(exc).__name__}: {exc}") from exc
        text = response.text
        snippet = self._redact(text[:200], key)
        status = response.status_code
        if status == 429 or status >= 500:
            raise _Retryable(
                f"HTTP {status}: {snippet!r}", retry_after=_parse_retry_after(response.headers.get("retry-after"))
            )
        if status >= 400:
            raise BackendError(f"{url}: HTTP {status} (not retried): {snippet!r}")
        try:
            return parse(json.loads(text))
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise _Retryable(f"malformed reply ({type(exc).__name__}: {exc}): {snippet!r}", malformed=True) from exc

    def _parse(self, reply: Any) -> Generation:
        choice = reply["choices"][0]
        message = choice["message"]
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise TypeError(f"message.content is {type(content).__name__}, not a string")
        finish = choice.get("finish_reason")
        logprobs: tuple[float, ...] = ()
        token_ids: tuple[int, ...] = ()
        entries = (choice.get("logprobs") or {}).get("content") or []
        if entries:
            logprobs = tuple(float(entry["logprob"]) for entry in entries)
            matches = [_TOKEN_ID.match(str(entry.get("token", ""))) for entry in entries]
            if all(matches):
                token_ids = tuple(int(m.group(1)) for m in matches if m)
        usage_in = reply.get("usage") or {}
        usage = {k: int(usage_in[k]) for k in ("prompt_tokens", "completion_tokens") if usage_in.get(k) is not None}
        return Generation(
            text=content or "",
            finish_reason="length" if finish == "length" else "stop",
            token_ids=token_ids,
            logprobs=logprobs,
            usage=usage,
        )

    def _parse_ids(self, prompt_ids: list[int]) -> Callable[[Any], Generation]:
        """A parser for a ``/completions`` reply to ``prompt_ids`` that insists on token ids."""

        def parse(reply: Any) -> Generation:
            choice = reply["choices"][0]
            text = choice["text"]
            if not isinstance(text, str):
                raise TypeError(f"choices[0].text is {type(text).__name__}, not a string")
            finish = choice.get("finish_reason")
            entries = choice.get("logprobs") or {}
            if not isinstance(entries, dict):
                raise TypeError(f"choices[0].logprobs is {type(entries).__name__}, not an object")
            tokens = entries.get("tokens")
            token_logprobs = entries.get("token_logprobs")
            matches = [_TOKEN_ID.match(t) if isinstance(t, str) else None for t in tokens or ()]
            if tokens is None or token_logprobs is None or not all(matches) or (text and not tokens):
                got = "no logprobs" if not entries else f"tokens {list(tokens or ())[:3]!r}"
                # Not retried: the server will answer the same way again.
                raise BackendError(
                    f"the server at {self.completions_url} did not return token ids ({got}); token-level "
                    "rollouts need a vLLM/SGLang server that honours return_tokens_as_token_ids, "
                    "or use TransformersBackend"
                )
            if len(token_logprobs) != len(tokens):
                raise ValueError(f"{len(tokens)} tokens but {len(token_logprobs)} token_logprobs")
            usage_in = reply.get("usage") or {}
            keys = ("prompt_tokens", "completion_tokens")
            return Generation(
                text=text,
                finish_reason="length" if finish == "length" else "stop",
                prompt_token_ids=tuple(prompt_ids),
                token_ids=tuple(int(m.group(1)) for m in matches if m),
                logprobs=tuple(float(lp) for lp in token_logprobs),
                usage={k: int(usage_in[k]) for k in keys if usage_in.get(k) is not None},
            )

        return parse
