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
) -> None:
    """Play one episode: ``harness(env, client, model)`` with an OpenAI client at ``base_url``, closed after.

    An ``async def`` harness gets an ``AsyncOpenAI`` in an event loop of its own (this call blocks until the
    episode ends). The client never retries: a refused call is the episode's failure, not something to repeat.
    ``timeout`` (seconds per call) is the client's own default when ``None``.

    Raises:
        DependencyNotInstalled: the ``openai`` package is missing.
        Exception: whatever the harness raises.
    """
    try:
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
            async with openai.AsyncOpenAI(**options) as client:
                await harness(env, client, model)

        asyncio.run(play())
        return
    with openai.OpenAI(**options) as client:
        result = harness(env, client, model)
        if inspect.isawaitable(result):
            asyncio.run(result)  # type: ignore[arg-type]
