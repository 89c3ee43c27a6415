"""Envs and agents with controlled latency and faults, for benchmarking and testing rollout engines and the bench.

:class:`LatencyEnv` is the straggler workload of the rollout benchmark: every tool call sleeps a
latency drawn per call (10-500 ms by default) and episodes last 1-8 turns, drawn per episode.
:class:`FaultyEnv` fails on purpose (raises, hangs, or kills its process) at a chosen turn, so
tests can show that one bad env never stalls or deadlocks a batch. :class:`InstantEnv` costs
microseconds a step, to time the bench runner alone, and :class:`ScriptedAgent` is the oracle
slowed down like a remote LLM. All are importable by name (``agentrl.rollout.workloads:ScriptedAgent``
for ``agentrl bench --agent``), so process and Ray workers can build them too. The speed scripts
that use them (``python benchmarks/concurrency.py``, ``python benchmarks/rollout.py``) live outside
the package, in the repository's ``benchmarks/`` folder.
"""

from __future__ import annotations

import asyncio
import os
import time
from types import SimpleNamespace
from typing import Any

import gymnasium as gym
import numpy as np

from agentrl.agents.simple import OracleAgent
from agentrl.core.episode import EpisodeEnv, Turn
from agentrl.core.errors import ResetNeeded
from agentrl.core.spaces import UnicodeText
from agentrl.core.verify import Score

__all__ = [
    "FAULTS", "INSTANT_ENV_ID", "FaultyEnv", "InstantEnv", "LatencyEnv", "ScriptedAgent", "register_instant_env",
]


class LatencyEnv(gym.Env[str, str]):
    """A tool-use episode of random length whose tool calls take random time.

    ``reset`` draws the episode length from ``[min_turns, max_turns]``; each ``step`` makes a tool
    call that takes a latency drawn uniformly from ``[min_latency_s, max_latency_s]`` and returns
    the tool's output. With ``tool="sleep"`` the call is a sleep in this process; with
    ``tool="python"`` it is a real sandboxed Python call
    (:class:`~agentrl.sandboxes.python.PythonSandbox`) that sleeps that long and prints a result.
    The last step ends the episode with reward 1.0 when the action has an even number of
    characters (0.0 otherwise), so rewards vary between rollouts of one task. All draws come from
    ``self.np_random``, so a seed fixes the episode length and every latency. Each step's info
    carries the latency it drew (``latency_s``), so a benchmark can tell the tool's own time from
    the time around it.

    Example:
        >>> env = LatencyEnv(min_latency_s=0.0, max_latency_s=0.0)
        >>> obs, info = env.reset(seed=0)
        >>> obs.startswith("Call the tool")
        True
        >>> obs, reward, terminated, truncated, info = env.step("call")
        >>> obs, info["latency_s"]
        ('Tool output 1.', 0.0)
    """

    metadata: dict[str, Any] = {"render_modes": [], "stop_sequences": ()}

    def __init__(
        self,
        min_turns: int = 1,
        max_turns: int = 8,
        min_latency_s: float = 0.01,
        max_latency_s: float = 0.5,
        tool: str = "sleep",
    ) -> None:
        if tool not in ("sleep", "python"):
            raise ValueError(f"tool must be 'sleep' or 'python', got {tool!r}")
        if not 1 <= min_turns <= max_turns:
            raise ValueError(f"expected 1 <= min_turns <= max_turns, got {min_turns} and {max_turns}")
        if not 0 <= min_latency_s <= max_latency_s:
            raise ValueError(f"expected 0 <= min_latency_s <= max_latency_s, got {min_latency_s}, {max_latency_s}")
        self.min_turns, self.max_turns = min_turns, max_turns
        self.min_latency_s, self.max_latency_s = min_latency_s, max_latency_s
        self.tool = tool
        self._sandbox: Any = None
        self.observation_space = UnicodeText(max_length=4096)
        self.action_space = UnicodeText(max_length=65536)
        self.system_prompt = "You call a tool until it says you are done."
        self._turns = 0
        self._turn = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Draw the episode length; return the task."""
        super().reset(seed=seed)
        self._turns = int(self.np_random.integers(self.min_turns, self.max_turns + 1))
        self._turn = 0
        return f"Call the tool {self._turns} times.", {"task_id": f"latency-{self._turns}", "turns": self._turns}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Sleep one tool latency; end the episode after the drawn number of turns."""
        if self._turns == 0:
            raise ResetNeeded("call reset() before step()")
        latency = float(self.np_random.uniform(self.min_latency_s, self.max_latency_s))
        self._turn += 1
        output = f"Tool output {self._turn}."
        if self.tool == "python":
            output = self._run_python(latency)
        else:
            time.sleep(latency)
        done = self._turn >= self._turns
        reward = float(len(action) % 2 == 0) if done else 0.0
        info = {"turn": self._turn, "void_turn": False, "latency_s": latency}  # the drawn latency, for floors
        if done:
            self._turns = 0
        return output, reward, done, False, info

    def _run_python(self, latency: float) -> str:
        if self._sandbox is None:
            from agentrl.sandboxes.python import PythonSandbox

            self._sandbox = PythonSandbox(mode="stateless", timeout_s=max(10.0, 4 * self.max_latency_s), preimport=())
        from agentrl.sandboxes.base import ExecutionRequest

        code = f"import time\ntime.sleep({latency!r})\nprint('Tool output {self._turn}:', sum(range(1000)))"
        result = self._sandbox.execute(ExecutionRequest(code))
        return result.output.strip() if result.ok else f"[error] {result.error}"

    def close(self) -> None:
        """Close the Python sandbox, if one was started."""
        sandbox, self._sandbox = self._sandbox, None
        if sandbox is not None:
            sandbox.close()


#: The faults :class:`FaultyEnv` can inject.
FAULTS = ("none", "reset_raises", "step_raises", "env_error", "hang", "exit", "construct_raises")


class FaultyEnv(gym.Env[str, str]):
    """An env that fails on purpose.

    Args:
        fault: ``"none"``, ``"reset_raises"``, ``"step_raises"`` (a ``RuntimeError`` at step
            ``at_turn``), ``"env_error"`` (step ``at_turn`` ends the episode with
            ``done_reason="env_error"``, as a desktop or game env does when its display or page
            crashes), ``"hang"`` (sleeps ``hang_s`` at step ``at_turn``), ``"exit"`` (the process
            dies at step ``at_turn``: only for process or Ray workers) or ``"construct_raises"``.
        at_turn: the 1-based step at which the fault strikes.
        turns: the episode length when no fault strikes.
        hang_s: how long a hang lasts.
        only_seeds: when given, the fault strikes only in episodes reset with one of these seeds.
    """

    metadata: dict[str, Any] = {"render_modes": [], "stop_sequences": ()}

    def __init__(
        self,
        fault: str = "step_raises",
        at_turn: int = 1,
        turns: int = 2,
        hang_s: float = 3600.0,
        only_seeds: tuple[int, ...] | None = None,
    ) -> None:
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; choose from {FAULTS}")
        if fault == "construct_raises":
            raise RuntimeError("FaultyEnv: injected fault while constructing the env")
        self.fault, self.at_turn, self.turns, self.hang_s = fault, at_turn, turns, hang_s
        self.only_seeds = None if only_seeds is None else frozenset(only_seeds)
        self.observation_space = UnicodeText(max_length=1024)
        self.action_space = UnicodeText(max_length=65536)
        self._turn = 0
        self._armed = True

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode (or raise, for ``"reset_raises"``)."""
        super().reset(seed=seed)
        self._armed = self.only_seeds is None or seed in self.only_seeds
        if self._armed and self.fault == "reset_raises":
            raise RuntimeError("FaultyEnv: injected fault in reset")
        self._turn = 0
        return "Say anything.", {"task_id": f"faulty-{seed}"}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Count the turn; strike at ``at_turn``."""
        self._turn += 1
        if self._armed and self._turn == self.at_turn:
            if self.fault == "step_raises":
                raise RuntimeError("FaultyEnv: injected fault in step")
            if self.fault == "env_error":
                info = {"turn": self._turn, "done_reason": "env_error", "env_error": "FaultyEnv: injected crash"}
                return "", 0.0, True, False, info
            if self.fault == "hang":
                time.sleep(self.hang_s)
            if self.fault == "exit":
                os._exit(17)
        done = self._turn >= self.turns
        return f"ok {self._turn}", float(done), done, False, {"turn": self._turn}


#: the id :func:`register_instant_env` registers
INSTANT_ENV_ID = "AgentRLBench/Instant-v0"


class ScriptedAgent(OracleAgent):
    r"""The oracle, slowed down: waits a random ``min_delay``-``max_delay`` seconds before each action.

    Args:
        seed: seeds the delays (the bench runner passes each episode's own seed).
        min_delay: the shortest wait, in seconds.
        max_delay: the longest wait, in seconds.

    ``aact`` waits with ``asyncio.sleep`` (like an agent awaiting an HTTP reply); ``act`` blocks with
    ``time.sleep``. A handy agent for tests and demos::

        agentrl bench --env AgentRL/TIRMath-v0 --agent agentrl.rollout.workloads:ScriptedAgent \
            --agent-option max_delay=0.05 --episodes 10 --concurrency 8 --out /tmp/scripted
    """

    name = "scripted"

    def __init__(self, seed: int | None = None, min_delay: float = 0.0, max_delay: float = 0.2) -> None:
        super().__init__()
        if not 0 <= min_delay <= max_delay:
            raise ValueError(f"need 0 <= min_delay <= max_delay, got {min_delay} and {max_delay}")
        self.min_delay = float(min_delay)
        self.max_delay = float(max_delay)
        self._rng = np.random.default_rng(seed)

    def _delay(self) -> float:
        return float(self._rng.uniform(self.min_delay, self.max_delay))

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        """Sleep, then return the next oracle action."""
        time.sleep(self._delay())
        return super().act(observation, info)

    async def aact(self, observation: Any, info: dict[str, Any]) -> str:
        """Wait without blocking the event loop, then return the next oracle action."""
        await asyncio.sleep(self._delay())
        return super().act(observation, info)


class InstantEnv(EpisodeEnv[str, str]):
    r"""A two-turn text env with no tools: think once, then answer ``\boxed{code}``; steps cost microseconds.

    It is on the episode contract (so :class:`ScriptedAgent` and the oracle solve it through
    ``oracle_action()``, and its ``info`` has the AgentRL keys). It exists to time the benchmark
    runner without any env cost.

    >>> env = InstantEnv()
    >>> observation, info = env.reset(seed=0)
    >>> for action in env.task.oracle_actions:
    ...     observation, reward, terminated, truncated, info = env.step(action)
    >>> reward, terminated, info["done_reason"]
    (1.0, True, 'answered')
    """

    metadata: dict[str, Any] = {"render_modes": [], "stop_sequences": ()}

    def __init__(self, max_turns: int = 4) -> None:
        super().__init__(max_turns=max_turns)
        self.observation_space = UnicodeText(1000)
        self.action_space = UnicodeText(65_536)
        self.task: Any = None

    def begin_episode(self, options: Any) -> tuple[str, dict[str, Any]]:
        """Draw a code word (a number) to repeat."""
        code = int(self.np_random.integers(10**6))
        self.task = SimpleNamespace(id=f"instant/{code}", answer=str(code),
                                    oracle_actions=("Let me think about it.", f"\\boxed{{{code}}}"))
        return f"Answer \\boxed{{{code}}} on your second turn.", {}

    def check_action(self, action: Any) -> None:
        """The action must be a ``str``."""
        if not isinstance(action, str):
            from agentrl.core.errors import InvalidActionType

            raise InvalidActionType(f"expected a str action, got {type(action).__name__}")

    def act(self, turn: Turn[str]) -> None:
        r"""Turn 1: anything; later: ``\boxed{code}`` ends the episode (scored at the end)."""
        if "\\boxed{" in turn.action:
            turn.observation, turn.terminated, turn.done_reason = "[episode over]", True, "answered"
        else:
            turn.observation = "Noted."

    def score_at_end(self, turn: Turn[str]) -> Score | None:
        """1 for the right code word, else 0; nothing for the budget's end."""
        if turn.done_reason != "answered":
            return None
        return Score(1.0 if f"\\boxed{{{self.task.answer}}}" in turn.action else 0.0)

    def oracle_plan(self) -> tuple[str, ...]:
        """Think once, then answer."""
        return self.task.oracle_actions

    def current_task_id(self) -> str | None:
        """The code word's task id."""
        return None if self.task is None else self.task.id


def register_instant_env() -> str:
    """Register :class:`InstantEnv` with Gymnasium (idempotent); returns its id."""
    if INSTANT_ENV_ID not in gym.registry:
        gym.register(id=INSTANT_ENV_ID, entry_point="agentrl.rollout.workloads:InstantEnv")
    return INSTANT_ENV_ID
