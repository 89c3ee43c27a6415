"""The one small interface every LLM backend speaks: chat messages in; text, token ids, logprobs out.

Trainers need the exact tokens that were sampled and their logprobs (token drift otherwise), so a
:class:`Generation` carries them whenever the backend can provide them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict, runtime_checkable

from agentrl.core.errors import AgentRLError

__all__ = ["BackendError", "ChatMessage", "Generation", "GenerationConfig", "LLMBackend"]


class ChatMessage(TypedDict):
    """One chat message: ``{"role": "system" | "user" | "assistant", "content": str}``."""

    role: str
    content: str


@dataclass(frozen=True)
class GenerationConfig:
    """Sampling settings for one request.

    Attributes:
        max_tokens: the most new tokens to generate.
        temperature: 0 for greedy decoding.
        top_p: nucleus sampling mass (1.0 disables it).
        stop: strings that end the generation; the returned text stops *before* the first one
            (as OpenAI's API does), and ``finish_reason`` is ``"stop"``.
        seed: makes sampling reproducible where the backend supports it.
    """

    max_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    seed: int | None = None


@dataclass(frozen=True)
class Generation:
    """One completion.

    Attributes:
        text: the generated text (without the stop string).
        finish_reason: ``"stop"`` (end of turn or stop string), ``"length"`` (max tokens) or ``"error"``.
        prompt_token_ids: the exact prompt tokens the model saw (empty when the backend does not say).
        token_ids: the exact generated token ids, as sampled (empty when unknown).
        logprobs: the sampler's logprob of each generated token (empty when unknown).
        usage: token counts, ``{"prompt_tokens": int, "completion_tokens": int}``.
    """

    text: str
    finish_reason: str = "stop"
    prompt_token_ids: tuple[int, ...] = ()
    token_ids: tuple[int, ...] = ()
    logprobs: tuple[float, ...] = ()
    usage: dict[str, int] = field(default_factory=dict)


class BackendError(AgentRLError, RuntimeError):
    """A backend failed after its retries (server down, bad reply); the message says what and where."""


@runtime_checkable
class LLMBackend(Protocol):
    """Chat in, :class:`Generation` out.

    ``generate`` is blocking; ``agenerate`` is its coroutine twin (backends batch concurrent calls
    where they can); ``count_tokens`` measures a conversation for history truncation.
    """

    name: str

    def generate(self, messages: Sequence[ChatMessage], config: GenerationConfig) -> Generation:
        """Complete one conversation."""
        ...

    async def agenerate(self, messages: Sequence[ChatMessage], config: GenerationConfig) -> Generation:
        """Complete one conversation without blocking the event loop."""
        ...

    def count_tokens(self, messages: Sequence[ChatMessage]) -> int:
        """The number of prompt tokens these messages take (an estimate where the tokenizer is unknown)."""
        ...

    def close(self) -> None:
        """Release threads, connections and model memory; idempotent."""
        ...


def describe_config(backend: Any) -> dict[str, Any]:
    """A JSON-serialisable description of a backend for result files (its ``config()`` if it has one)."""
    config = getattr(backend, "config", None)
    return dict(config()) if callable(config) else {"name": getattr(backend, "name", type(backend).__name__)}
