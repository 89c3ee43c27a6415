"""An agent harness, as the trainer and the bench both run it: ``run_episode(env, client, model)``.

A *harness* is a callable (or ``async def``) that plays one episode of ``env`` and asks its model through
``client``, an ``openai.OpenAI`` (``openai.AsyncOpenAI`` for an ``async def`` harness), under the model name
``model``. :func:`load_harness` finds one by its ``package.module:function`` name; :func:`call_harness` hands it
a client of the kind it takes. The trainer (:class:`agentrl.rollout.harness.HarnessEngine`) points that client at
a recording endpoint, the bench (:class:`agentrl.agents.harness.HarnessAgent`) at the backend's server.

>>> load_harness("json:dumps").__name__
'dumps'
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from agentrl.core.errors import DependencyNotInstalled
from agentrl.core.imports import import_object

__all__ = ["Harness", "call_harness", "load_harness"]

Harness = Callable[[Any, Any, str], Any]


def load_harness(spec: str | Harness) -> Harness:
    """The harness named ``package.module:function`` (a callable is returned as is).

    Raises:
        ValueError: ``spec`` is not ``module:function``, cannot be imported, or is not callable.
    """
    if callable(spec):
        return spec
    harness = import_object(str(spec), "harness")
    if not callable(harness):
        raise ValueError(f"{spec} is a {type(harness).__name__}, not a callable run_episode(env, client, model)")
    return harness  # type: ignore[no-any-return]


def call_harness(
    harness: Harness,
    env: Any,
    model: str,
    *,
    base_url: str,
    api_key: str = "agentrl",
    headers: Mapping[str, str] | None = None,
    timeout: float | None = None,
    on_usage: Callable[[Mapping[str, Any]], None] | None = None,
) -> None:
    """Play one episode: ``harness(env, client, model)`` with an OpenAI client at ``base_url``, closed after.

    An ``async def`` harness gets an ``AsyncOpenAI`` in an event loop of its own (this call blocks until the
    episode ends). The client never retries: a refused call is the episode's failure, not something to repeat.
    ``timeout`` (seconds per call) is the client's own default when ``None``. ``on_usage`` is called with the
    ``usage`` of every JSON reply (OpenAI's ``prompt_tokens``/``completion_tokens``), read off the wire, so the
    tokens a harness spends are counted whatever it does with the replies (a streamed reply is not counted).

    Raises:
        DependencyNotInstalled: the ``openai`` package is missing.
        Exception: whatever the harness raises.
    """
    try:
        import httpx
        import openai
    except ImportError as exc:
        raise DependencyNotInstalled("openai", extra="harness") from exc
    options: dict[str, Any] = {"base_url": base_url, "api_key": api_key, "max_retries": 0}
    if headers:
        options["default_headers"] = dict(headers)
    if timeout is not None:
        options["timeout"] = timeout
    if inspect.iscoroutinefunction(harness):

        async def play() -> None:
            # Inside the episode's event loop: the client's connections cannot outlive it.
            if on_usage is not None:
                options["http_client"] = httpx.AsyncClient(event_hooks={"response": [_async_usage_hook(on_usage)]})
            async with openai.AsyncOpenAI(**options) as client:
                await harness(env, client, model)

        asyncio.run(play())
        return
    if on_usage is not None:
        options["http_client"] = httpx.Client(event_hooks={"response": [_usage_hook(on_usage)]})
    with openai.OpenAI(**options) as client:
        result = harness(env, client, model)
        if inspect.isawaitable(result):
            asyncio.run(result)  # type: ignore[arg-type]


def _reported_usage(response: Any) -> Mapping[str, Any] | None:
    """The ``usage`` object of a JSON reply (``None`` for errors, streams and replies without one)."""
    if response.status_code != 200 or not response.headers.get("content-type", "").startswith("application/json"):
        return None
    try:
        usage = response.json().get("usage")
    except (ValueError, AttributeError):
        return None
    return usage if isinstance(usage, Mapping) else None


def _usage_hook(on_usage: Callable[[Mapping[str, Any]], None]) -> Callable[[Any], None]:
    def hook(response: Any) -> None:
        response.read()  # the body is kept: the client parses it after this hook
        usage = _reported_usage(response)
        if usage is not None:
            on_usage(usage)

    return hook


def _async_usage_hook(on_usage: Callable[[Mapping[str, Any]], None]) -> Callable[[Any], Any]:
    async def hook(response: Any) -> None:
        await response.aread()
        usage = _reported_usage(response)
        if usage is not None:
            on_usage(usage)

    return hook
