"""A tiny verifiable text env that a randomly initialised tiny model can learn in a few minutes on CPU.

:class:`LetterEnv` asks for replies made of one target letter; each turn's reward is the share of
the reply's first ``reply_chars`` characters that are that letter. A random tiny model scores a
few percent; a policy-gradient run drives the share up. It is the learning signal of the trainer's
tests, of ``make demo``'s GRPO run and of the TRL comparison, and it has turn-level rewards when
``turns > 1`` (for PPO's per-turn credit assignment).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentrl.core.episode import EpisodeEnv, Turn
from agentrl.core.spaces import UnicodeText

COLOUR_LETTERS: dict[str, tuple[tuple[int, int, int], str]] = {
    "red": ((230, 40, 40), "a"),
    "blue": ((40, 60, 230), "b"),
}
"""ColourLetterEnv's colours: the square's RGB and the letter that colour asks for."""

__all__ = ["COLOUR_LETTERS", "ColourLetterEnv", "LetterEnv", "letter_reward"]


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


class LetterEnv(EpisodeEnv[str, str]):
    """Write the target letter as many times as you can, for ``turns`` turns.

    Observation: the instruction, then after each turn the score of that turn. Action: free text.
    Reward: :func:`letter_reward` of each turn's reply, given at that turn (the episode contract's
    per-step reward hook). The episode ends after ``turns`` turns (terminated, ``done_reason =
    "turns_done"``). Seeds pick nothing (the task is always the same), so every group of rollouts
    starts identically. ``info`` has the contract's keys and ``success`` (the turn's share >= 0.5);
    as in v0, ``info["turn"]`` is -1 after the last turn (deprecated: read ``turns_left == 0``).
    The oracle writes ``reply_chars`` target letters.

    Example:
        >>> env = LetterEnv(target="a", turns=2)
        >>> obs, info = env.reset(seed=0)
        >>> env.step("aaaa")[1:3]
        (0.25, False)
    """

    metadata: dict[str, Any] = {"render_modes": [], "stop_sequences": ()}
    deprecated_info = {"turn": "v0: -1 after the last turn; read info['turns_left'] == 0 instead"}

    def __init__(self, target: str = "a", turns: int = 1, reply_chars: int = 16) -> None:
        if len(target) != 1:
            raise ValueError(f"target must be one character, got {target!r}")
        if turns < 1:
            raise ValueError(f"turns must be at least 1, got {turns}")
        super().__init__(max_turns=int(turns))
        self.target, self.turns, self.reply_chars = target, turns, reply_chars
        self.observation_space = UnicodeText(max_length=1024)
        self.action_space = UnicodeText(max_length=65536)
        self.system_prompt = ""
        self._gain = 0.0

    @property
    def instruction(self) -> str:
        """The first observation."""
        return f"Write the letter {self.target} as many times as you can."

    def begin_episode(self, options: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """Start an episode (always the same task)."""
        return self.instruction, {}

    def act(self, turn: Turn[str]) -> None:
        """Score the reply; the last turn ends the episode."""
        self._gain = letter_reward(str(turn.action), self.target, self.reply_chars)
        turn.observation = f"Score {self._gain:.2f}. Again."
        turn.reward_components = {"letters": self._gain}
        if self._turn >= self.turns:
            turn.terminated, turn.done_reason = True, "turns_done"
        turn.info = {"success": self._gain >= 0.5}
        if turn.terminated:
            turn.info["turn"] = -1  # v0's value (deprecated)

    def step_reward(self, turn: Turn[str]) -> float:
        """The share of target letters in this turn's reply."""
        return self._gain

    def oracle_plan(self) -> tuple[str, ...]:
        """Nothing but the target letter."""
        return (self.target * self.reply_chars,)

    def current_task_id(self) -> str | None:
        """``letter-<target>``."""
        return f"letter-{self.target}"


class ColourLetterEnv(EpisodeEnv[dict[str, Any], str]):
    """The pixel twin of :class:`LetterEnv`: the letter to write is shown only by a colour.

    Observation: ``{"pixels": (size, size, 3) uint8, "text": str}``; the image is a square filled with
    red or blue (:data:`COLOUR_LETTERS`, picked by the seed), the text says only "Write the letter this
    colour stands for". Red asks for ``a``, blue for ``b``. Reward: :func:`letter_reward` of the reply
    against that letter; one turn. A model that ignores the image can at best write one letter and score
    0.5 on average; reading the colour is what takes it to 1. It is the learning signal of the pixel
    training test (``tests/train/test_vlm_training.py``).

    Example:
        >>> env = ColourLetterEnv()
        >>> obs, info = env.reset(seed=0)
        >>> obs["pixels"].shape, info["task_id"] in ("colour-red", "colour-blue")
        ((56, 56, 3), True)
        >>> env.step(env.oracle_plan()[0])[1]
        1.0
    """

    metadata: dict[str, Any] = {"render_modes": [], "stop_sequences": ()}

    def __init__(self, size: int = 56, reply_chars: int = 8) -> None:
        import numpy as np
        from gymnasium import spaces

        super().__init__(max_turns=1)
        self.size, self.reply_chars = int(size), int(reply_chars)
        self.observation_space = spaces.Dict(
            {"pixels": spaces.Box(0, 255, (self.size, self.size, 3), np.uint8), "text": UnicodeText(max_length=256)}
        )
        self.action_space = UnicodeText(max_length=65536)
        self.system_prompt = ""
        self.colour = "red"
        self._gain = 0.0

    def begin_episode(self, options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Pick the colour from the seed (or ``options["colour"]``) and show it."""
        import numpy as np

        names = sorted(COLOUR_LETTERS)
        chosen = options.get("colour")
        self.colour = str(chosen) if chosen in COLOUR_LETTERS else names[int(self.np_random.integers(len(names)))]
        pixels = np.zeros((self.size, self.size, 3), dtype=np.uint8)
        pixels[:] = COLOUR_LETTERS[self.colour][0]
        return {"pixels": pixels, "text": "Write the letter this colour stands for."}, {}

    @property
    def target(self) -> str:
        """The letter the current colour asks for."""
        return COLOUR_LETTERS[self.colour][1]

    def act(self, turn: Turn[dict[str, Any]]) -> None:
        """Score the reply; the episode ends."""
        import numpy as np

        self._gain = letter_reward(str(turn.action), self.target, self.reply_chars)
        turn.observation = {"pixels": np.zeros((self.size, self.size, 3), dtype=np.uint8), "text": "Done."}
        turn.reward_components = {"letters": self._gain}
        turn.terminated, turn.done_reason = True, "turns_done"
        turn.info = {"success": self._gain >= 0.5}

    def step_reward(self, turn: Turn[dict[str, Any]]) -> float:
        """The share of the right letter in the reply."""
        return self._gain

    def oracle_plan(self) -> tuple[str, ...]:
        """The right letter, ``reply_chars`` times."""
        return (self.target * self.reply_chars,)

    def current_task_id(self) -> str | None:
        """``colour-<name>``."""
        return f"colour-{self.colour}"
