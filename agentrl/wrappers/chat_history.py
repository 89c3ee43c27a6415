"""``ChatHistory``: observations become the chat so far, as a tuple of chat messages."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium import spaces

from agentrl.core.spaces import UnicodeText
from agentrl.llm.base import ChatMessage

__all__ = ["ChatHistory"]

_ROLES = ("system", "user", "assistant")


def _max_length(space: gym.Space[Any], default: int) -> int:
    return int(space.max_length) if isinstance(space, spaces.Text) else default


class ChatHistory(gym.Wrapper[tuple[ChatMessage, ...], str, Any, str], gym.utils.RecordConstructorArgs):
    """Observations become the whole chat so far: ``({"role": ..., "content": ...}, ...)``.

    The chat starts with a ``system`` message (``system_prompt``, or ``env.unwrapped.system_prompt``
    when the env has one and it is not empty), then alternates ``user`` messages (the env's
    observations) and ``assistant`` messages (the actions taken). An LLM agent can pass the
    observation to a chat template as it is (``list(observation)``).

    Observation space: ``Sequence(Dict(role=Text, content=UnicodeText))`` (Gymnasium's ``Sequence``
    holds tuples, so the chat is a tuple of plain ``dict`` messages); it passes ``check_env``.
    The inner env's observations must be ``str``.

    Args:
        env: a text env (``str`` observations and actions).
        system_prompt: the system message; ``None`` reads ``env.unwrapped.system_prompt``; ``""``
            leaves the system message out.

    >>> import gymnasium as gym, agentrl
    >>> env = ChatHistory(gym.make("AgentRL-MA/tictactoe-vs-random-v0"), system_prompt="Play well.")
    >>> chat, info = env.reset(seed=0)
    >>> [m["role"] for m in chat]
    ['system', 'user']
    >>> chat, reward, terminated, truncated, info = env.step("[5]")
    >>> [m["role"] for m in chat], chat[2]["content"]
    (['system', 'user', 'assistant', 'user'], '[5]')
    """

    def __init__(self, env: gym.Env[str, str], system_prompt: str | None = None) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, system_prompt=system_prompt)
        super().__init__(env)
        if system_prompt is None:
            system_prompt = getattr(env.unwrapped, "system_prompt", "") or ""
        if not isinstance(system_prompt, str):
            raise TypeError(f"system_prompt must be a str or None, got {type(system_prompt).__name__}")
        self.system_prompt = system_prompt
        content_chars = max(
            _max_length(env.observation_space, 1 << 20), _max_length(env.action_space, 1 << 20), len(system_prompt)
        )
        message_space = spaces.Dict(
            {
                "role": spaces.Text(min_length=4, max_length=9, charset="abcdefghijklmnopqrstuvwxyz"),
                "content": UnicodeText(content_chars),
            }
        )
        self.observation_space = spaces.Sequence(message_space)
        self._messages: list[ChatMessage] = []

    @property
    def messages(self) -> list[ChatMessage]:
        """A copy of the chat so far (the same messages as the last observation)."""
        return [ChatMessage(role=m["role"], content=m["content"]) for m in self._messages]

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[tuple[ChatMessage, ...], dict[str, Any]]:
        """Reset the env and start a new chat: the system message and the first observation."""
        observation, info = self.env.reset(seed=seed, options=options)
        self._messages = [ChatMessage(role="system", content=self.system_prompt)] if self.system_prompt else []
        self._messages.append(ChatMessage(role="user", content=self._text(observation)))
        return self._chat(), info

    def step(self, action: str) -> tuple[tuple[ChatMessage, ...], Any, bool, bool, dict[str, Any]]:
        """Take the step; the chat grows by the action (``assistant``) and the observation (``user``)."""
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._messages.append(ChatMessage(role="assistant", content=str(action)))
        self._messages.append(ChatMessage(role="user", content=self._text(observation)))
        return self._chat(), reward, terminated, truncated, info

    def _chat(self) -> tuple[ChatMessage, ...]:
        return tuple(ChatMessage(role=m["role"], content=m["content"]) for m in self._messages)

    @staticmethod
    def _text(observation: Any) -> str:
        if not isinstance(observation, str):
            raise TypeError(
                f"ChatHistory needs str observations, got {type(observation).__name__}; "
                "put it directly around a text env (before TextToEmbedding or other observation wrappers)"
            )
        return str(observation)
