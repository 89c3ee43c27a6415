"""``Curriculum``: move a difficulty knob up and down with the agent's recent success rate."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any, Literal

import gymnasium as gym

__all__ = ["Curriculum"]


class Curriculum(gym.Wrapper[Any, Any, Any, Any], gym.utils.RecordConstructorArgs):
    """Adapt a difficulty-like knob to the agent: promote after successes, demote after failures.

    An episode succeeds when its last ``info`` has ``success`` (truthy), else when its return is
    positive. After each ``window`` finished episodes at one level, a success rate ``>= promote_at``
    moves to the next level, ``<= demote_at`` to the previous one; the window restarts at every
    change. The new level applies from the next reset. ``info["curriculum_level"]`` is the level of
    the running episode.

    How the level reaches the env (``mode``):

    * ``"task_source"``: the env's task source has a ``<option>_range`` attribute (the procedural
      sources of ``AgentRL/TIRMath-v0`` and ``AgentRL/SQL-v0``, whose ``difficulty=`` runs 1-5); it
      is set to ``(level, level)`` before each reset;
    * ``"reset_option"``: ``reset(options={option: level, ...})``, for envs that read the option;
    * ``"auto"`` (default): ``"task_source"`` when the env has that attribute, else a ``ValueError``
      naming the envs that have the knob (``AgentRL/Search-v0``, the game views and JSONL datasets
      have none). Pass ``mode="reset_option"`` for your own env that reads ``options[option]``.

    Args:
        env: the env.
        option: the knob's name.
        levels: the levels, easiest first.
        promote_at: success rate that moves one level up.
        demote_at: success rate that moves one level down.
        window: finished episodes judged at once.
        start: the first level (default: the easiest).
        mode: see above.

    >>> import gymnasium as gym, agentrl
    >>> env = Curriculum(gym.make("AgentRL/SQL-v0", schemas=["shop"]), levels=(1, 2, 3), window=2)
    >>> _, info = env.reset(seed=0)
    >>> info["curriculum_level"], info["task_id"].split("/")[3]
    (1, 'd1')
    >>> for _ in range(2):  # two wins in a row: promoted
    ...     env.record_episode(True)
    >>> env.level
    2
    >>> env.close()
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        option: str = "difficulty",
        levels: Sequence[Any] = (1, 2, 3, 4, 5),
        promote_at: float = 0.8,
        demote_at: float = 0.2,
        window: int = 20,
        *,
        start: Any = None,
        mode: Literal["auto", "task_source", "reset_option"] = "auto",
    ) -> None:
        gym.utils.RecordConstructorArgs.__init__(
            self,
            option=option,
            levels=levels,
            promote_at=promote_at,
            demote_at=demote_at,
            window=window,
            start=start,
            mode=mode,
        )
        super().__init__(env)
        self.levels = tuple(levels)
        if not self.levels:
            raise ValueError("levels must not be empty")
        if not 0.0 <= demote_at < promote_at <= 1.0:
            raise ValueError(
                f"need 0 <= demote_at < promote_at <= 1, got demote_at={demote_at}, promote_at={promote_at}"
            )
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"window must be an int >= 1, got {window!r}")
        self.option = option
        self.promote_at = promote_at
        self.demote_at = demote_at
        self.window = window
        self._index = 0 if start is None else self._find(start)
        self.mode = self._pick_mode(mode)
        self.results: deque[bool] = deque(maxlen=window)
        self.history: list[tuple[int, Any]] = []  # (episodes finished, new level) at each change
        self.episodes = 0
        self._return = 0.0
        self._episode_level = self.level

    @property
    def level(self) -> Any:
        """The level the next episode will play."""
        return self.levels[self._index]

    def _find(self, level: Any) -> int:
        if level not in self.levels:
            raise ValueError(f"start={level!r} is not one of levels={self.levels}")
        return self.levels.index(level)

    def _pick_mode(self, mode: str) -> str:
        if mode not in ("auto", "task_source", "reset_option"):
            raise ValueError(f"mode must be 'auto', 'task_source' or 'reset_option', got {mode!r}")
        has_source_knob = hasattr(getattr(self.env.unwrapped, "task_source", None), f"{self.option}_range")
        if mode == "reset_option":
            return mode
        if has_source_knob:
            return "task_source"
        env_name = self.env.spec.id if self.env.spec is not None else type(self.env.unwrapped).__name__
        raise ValueError(
            f"{env_name} has no {self.option!r} knob that Curriculum can move: its task source has no "
            f"'{self.option}_range' attribute. Envs with a difficulty knob: AgentRL/TIRMath-v0 and AgentRL/SQL-v0 "
            "(procedural tasks, difficulty 1-5; not with dataset=...). If your env reads "
            f"reset(options={{{self.option!r}: level}}), pass mode='reset_option'."
        )

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset the env at the current level."""
        level = self.level
        if self.mode == "task_source":
            setattr(self.env.unwrapped.task_source, f"{self.option}_range", (level, level))  # type: ignore[attr-defined]
        else:
            options = {**(options or {}), self.option: level}
        observation, info = self.env.reset(seed=seed, options=options)
        self._return = 0.0
        self._episode_level = level
        return observation, {**info, "curriculum_level": level}

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        """Take the step; at the end of an episode, judge it and maybe change the level."""
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._return += float(reward)
        if terminated or truncated:
            success = bool(info["success"]) if "success" in info else self._return > 0
            self.record_episode(success)
        return observation, reward, terminated, truncated, {**info, "curriculum_level": self._episode_level}

    def record_episode(self, success: bool) -> None:
        """Count one finished episode (``step`` calls this; call it yourself to judge episodes differently)."""
        self.episodes += 1
        self.results.append(bool(success))
        if len(self.results) < self.window:
            return
        rate = sum(self.results) / len(self.results)
        if rate >= self.promote_at and self._index < len(self.levels) - 1:
            self._change(+1)
        elif rate <= self.demote_at and self._index > 0:
            self._change(-1)

    def success_rate(self) -> float | None:
        """The success rate over the current window (``None`` before any episode)."""
        return sum(self.results) / len(self.results) if self.results else None

    def _change(self, delta: int) -> None:
        self._index += delta
        self.results.clear()
        self.history.append((self.episodes, self.level))
