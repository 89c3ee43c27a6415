"""``TokenBudget``: truncate an episode once its actions (and observations) spend a token budget."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from agentrl.core.errors import ResetNeeded

__all__ = ["TokenBudget", "count_chars", "count_words"]


def count_words(text: str) -> int:
    """Whitespace-separated words: a tokenizer-free token count.

    >>> count_words("print(1 + 2)  # three")
    5
    """
    return len(text.split())


def count_chars(text: str) -> int:
    """About four characters a token (OpenAI's rule of thumb for English), rounded up.

    >>> count_chars("hello world"), count_chars("")
    (3, 0)
    """
    return math.ceil(len(text) / 4)


def _counter(count: Any) -> Callable[[str], int]:
    if count is None or count == "words":
        return count_words
    if count == "chars":
        return count_chars
    encode = getattr(count, "encode", None)
    if callable(encode) and not isinstance(count, str):  # a tokenizer (Hugging Face, tiktoken, ...)

        def by_tokenizer(text: str) -> int:
            ids = encode(text)
            ids = getattr(ids, "ids", ids)  # `tokenizers.Encoding`
            return len(ids)

        return by_tokenizer
    if callable(count):
        return count
    raise TypeError(
        f"count must be None, 'words', 'chars', a tokenizer with .encode(text) or a function str -> int, got {count!r}"
    )


class TokenBudget(gym.Wrapper[Any, Any, Any, Any], gym.utils.RecordConstructorArgs):
    """End an episode (``truncated=True``) once it has spent ``max_tokens`` tokens.

    Each action's tokens count (and each observation's, reset's included, with
    ``count_observations=True``). The step whose action spends the budget still runs; it returns
    ``truncated=True`` and ``info["done_reason"] = "token_budget"`` unless the env ended the
    episode itself on that step. ``info`` also carries ``tokens_used`` and ``tokens_left``. A step
    after the budget is spent raises :class:`~agentrl.core.errors.ResetNeeded`.

    Args:
        env: a text env.
        max_tokens: the budget per episode (>= 1).
        count: how tokens are counted: ``None``/``"words"`` (whitespace words), ``"chars"`` (about
            4 characters a token), a tokenizer with ``.encode(text)`` or a function ``str -> int``.
        count_observations: count the observations too.

    >>> import gymnasium as gym, agentrl
    >>> env = TokenBudget(gym.make("AgentRL-MA/tictactoe-vs-random-v0"), max_tokens=2)
    >>> _ = env.reset(seed=0)
    >>> _, _, terminated, truncated, info = env.step("I play [5]")
    >>> truncated, info["done_reason"], info["tokens_used"], info["tokens_left"]
    (True, 'token_budget', 3, 0)
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        max_tokens: int,
        count: Any = None,
        *,
        count_observations: bool = False,
    ) -> None:
        gym.utils.RecordConstructorArgs.__init__(
            self, max_tokens=max_tokens, count=count, count_observations=count_observations
        )
        super().__init__(env)
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be an int >= 1, got {max_tokens!r}")
        self.max_tokens = max_tokens
        self.count = _counter(count)
        self.count_observations = count_observations
        self.tokens_used = 0
        self._spent = False

    @property
    def tokens_left(self) -> int:
        """Tokens left in this episode's budget (0 once spent)."""
        return max(0, self.max_tokens - self.tokens_used)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset the env and the budget."""
        observation, info = self.env.reset(seed=seed, options=options)
        self.tokens_used = self._count_observation(observation)
        self._spent = False
        return observation, self._info(info)

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        """Take the step, count its tokens and truncate the episode when the budget is spent."""
        if self._spent:
            raise ResetNeeded("the token budget of this episode is spent (truncated); call reset()")
        observation, reward, terminated, truncated, info = self.env.step(action)
        self.tokens_used += self.count(action if isinstance(action, str) else str(action))
        self.tokens_used += self._count_observation(observation)
        info = self._info(info)
        if self.tokens_used >= self.max_tokens:
            self._spent = True
            if not (terminated or truncated):
                truncated = True
                info["done_reason"] = "token_budget"
        return observation, reward, terminated, truncated, info

    def _count_observation(self, observation: Any) -> int:
        return self.count(observation) if self.count_observations and isinstance(observation, str) else 0

    def _info(self, info: dict[str, Any]) -> dict[str, Any]:
        return {**info, "tokens_used": self.tokens_used, "tokens_left": self.tokens_left}
