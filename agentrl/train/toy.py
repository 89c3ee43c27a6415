"""A tiny verifiable text env that a randomly initialised tiny model can learn in a few minutes on CPU.

:class:`LetterEnv` asks for replies made of one target letter; each turn's reward is the share of
the reply's first ``reply_chars`` characters that are that letter. A random tiny model scores a
few percent; a policy-gradient run drives the share up. It is the learning signal of the trainer's
tests, of ``make demo``'s GRPO run and of the TRL comparison, and it has turn-level rewards when
``turns > 1`` (for PPO's per-turn credit assignment).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from agentrl.core.spaces import UnicodeText

__all__ = ["LetterEnv", "letter_reward"]


def letter_reward(reply: str, target: str = "a", reply_chars: int = 16) -> float:
    """The share of the first ``reply_chars`` characters of ``reply`` that are ``target``.

    Missing characters count as misses, so an empty or short reply cannot score high.

    Example:
        >>> letter_reward("aaab", "a", reply_chars=8)
        0.375
    """
    if reply_chars < 1:
        raise ValueError(f"reply_chars must be at least 1, got {reply_chars}")
    return sum(1 for c in reply[:reply_chars] if c == target) / reply_chars


class LetterEnv(gym.Env[str, str]):
    """Write the target letter as many times as you can, for ``turns`` turns.

    Observation: the instruction, then after each turn the score of that turn. Action: free text.
    Reward: :func:`letter_reward` of each turn's reply, given at that turn. The episode ends after
    ``turns`` turns (terminated). Seeds pick nothing (the task is always the same), so every
    group of rollouts starts identically.

    Example:
        >>> env = LetterEnv(target="a", turns=2)
        >>> obs, info = env.reset(seed=0)
        >>> env.step("aaaa")[1:3]
        (0.25, False)
    """

    metadata: dict[str, Any] = {"render_modes": [], "stop_sequences": ()}

    def __init__(self, target: str = "a", turns: int = 1, reply_chars: int = 16) -> None:
        if len(target) != 1:
            raise ValueError(f"target must be one character, got {target!r}")
        if turns < 1:
            raise ValueError(f"turns must be at least 1, got {turns}")
        self.target, self.turns, self.reply_chars = target, turns, reply_chars
        self.observation_space = UnicodeText(max_length=1024)
        self.action_space = UnicodeText(max_length=65536)
        self.system_prompt = ""
        self._turn = -1

    @property
    def instruction(self) -> str:
        """The first observation."""
        return f"Write the letter {self.target} as many times as you can."

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode (always the same task)."""
        super().reset(seed=seed)
        self._turn = 0
        return self.instruction, {"task_id": f"letter-{self.target}", "turn": 0}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Score the reply."""
        if self._turn < 0:
            raise gym.error.ResetNeeded("call reset() before step()")
        reward = letter_reward(str(action), self.target, self.reply_chars)
        self._turn += 1
        done = self._turn >= self.turns
        if done:
            self._turn = -1
        info = {"turn": self._turn, "void_turn": False, "success": reward >= 0.5}
        return f"Score {reward:.2f}. Again.", reward, done, False, info
