"""``RecordTrajectory``: append every step of every episode to a JSONL trace file."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import IO, Any

import gymnasium as gym
import numpy as np

from agentrl.core.serialize import json_safe
from agentrl.core.text import truncate_middle

__all__ = ["RecordTrajectory", "to_jsonable"]


def to_jsonable(value: Any, max_chars: int | None = None) -> Any:
    """``value`` as strict-JSON data: numpy values become Python ones, unknown objects their ``repr``.

    Strings longer than ``max_chars`` are cut in the middle (with a marker); NaN/inf become ``None``.

    >>> to_jsonable({"x": np.float32(0.5), "v": np.arange(3), "s": {1}, "n": float("nan")})
    {'x': 0.5, 'v': [0, 1, 2], 's': '{1}', 'n': None}
    """
    if isinstance(value, str):
        return truncate_middle(value, max_chars) if max_chars is not None else value
    if value is None or isinstance(value, (bool, int, float)):
        return json_safe(value)
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist())
    if isinstance(value, np.generic):
        return json_safe(value.item())
    if isinstance(value, dict):
        return {str(k): to_jsonable(v, max_chars) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v, max_chars) for v in value]
    return repr(value)


class RecordTrajectory(gym.Wrapper[Any, Any, Any, Any], gym.utils.RecordConstructorArgs):
    """Append one JSON line per reset and per step to ``path``; flushed at the end of each episode.

    Each line: ``run`` (an id per wrapper), ``episode`` (0, 1, ...), ``step`` (0 for the reset),
    ``action`` (``None`` at reset), ``observation`` (text cut to ``max_observation_chars``; arrays as
    lists), ``reward``, ``terminated``, ``truncated``, ``info`` (JSON-safe), ``seed`` (resets) and
    ``time`` (``unix`` wall clock and ``step_s``, the seconds the env took). Timings live in the
    trace, never in ``info``. The file is opened on the first reset, in append mode, so several
    runs can share a file; :meth:`close` flushes and closes it and is safe to call twice.

    Args:
        env: any env.
        path: the JSONL file (its folder is created).
        max_observation_chars: longer text observations (and strings in ``info``) are cut in the middle.

    >>> import gymnasium as gym, agentrl, json, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "trace.jsonl")
    >>> env = RecordTrajectory(gym.make("AgentRL-MA/tictactoe-vs-random-v0"), path)
    >>> _ = env.reset(seed=0); _ = env.step("[5]"); env.close(); env.close()
    >>> lines = [json.loads(line) for line in open(path)]
    >>> [(x["episode"], x["step"], x["action"]) for x in lines]
    [(0, 0, None), (0, 1, '[5]')]
    """

    def __init__(
        self, env: gym.Env[Any, Any], path: str | os.PathLike[str], *, max_observation_chars: int = 2000
    ) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, path=path, max_observation_chars=max_observation_chars)
        super().__init__(env)
        self.path = Path(path)
        self.max_observation_chars = max_observation_chars
        self.run_id = uuid.uuid4().hex[:12]
        self.episode = -1
        self._step = 0
        self._file: IO[str] | None = None
        self._closed = False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset the env and record the first observation as step 0 of a new episode."""
        self._flush()
        start = time.perf_counter()
        observation, info = self.env.reset(seed=seed, options=options)
        elapsed = time.perf_counter() - start
        self.episode += 1
        self._step = 0
        self._write(None, observation, None, False, False, info, elapsed, seed=seed)
        return observation, info

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        """Take the step and record it; flush when the episode ends."""
        start = time.perf_counter()
        observation, reward, terminated, truncated, info = self.env.step(action)
        elapsed = time.perf_counter() - start
        self._step += 1
        self._write(action, observation, reward, terminated, truncated, info, elapsed)
        if terminated or truncated:
            self._flush()
        return observation, reward, terminated, truncated, info

    def close(self) -> None:
        """Flush and close the trace, then close the env; safe to call twice."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if not self._closed:
            self._closed = True
            self.env.close()

    def _write(
        self,
        action: Any,
        observation: Any,
        reward: Any,
        terminated: bool,
        truncated: bool,
        info: dict[str, Any],
        elapsed: float,
        seed: int | None = None,
    ) -> None:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a", encoding="utf-8")
        limit = self.max_observation_chars
        record: dict[str, Any] = {
            "run": self.run_id,
            "episode": self.episode,
            "step": self._step,
            "action": to_jsonable(action, limit),
            "observation": to_jsonable(observation, limit),
            "reward": to_jsonable(reward),
            "terminated": bool(terminated),
            "truncated": bool(truncated),
            "info": to_jsonable(info, limit),
            "time": {"unix": time.time(), "step_s": elapsed},
        }
        if self._step == 0:
            record["seed"] = seed
        self._file.write(json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n")

    def _flush(self) -> None:
        if self._file is not None:
            self._file.flush()
