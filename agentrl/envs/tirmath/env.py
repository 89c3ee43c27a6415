"""``AgentRL/TIRMath-v0``: tool-integrated math reasoning (after ToRL, SimpleTIR, VerlTool VT-Math)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Literal

from agentrl.core.actions import Action
from agentrl.core.choices import level_range
from agentrl.core.dataset import DatasetCard, NoTaskDataset
from agentrl.core.env import AgentEnv
from agentrl.core.task import Task
from agentrl.envs.tirmath.actions import TIRActionSet
from agentrl.envs.tirmath.tasks import DIFFICULTIES, EASY, ID_PREFIX
from agentrl.envs.tirmath.verify import MathVerifier
from agentrl.sandboxes.base import ExecutionResult, Sandbox

__all__ = ["EASY_SYSTEM_PROMPT", "SYSTEM_PROMPT", "TIRMathEnv", "render_tool_output"]

SYSTEM_PROMPT = (
    "You are an expert mathematician who solves problems step by step and uses Python to compute "
    "whatever is tedious or error-prone. Think briefly, compute, check, then answer."
)
#: The easy tier's role: no code, no "expert" persona that a 135M model turns into a long derivation.
EASY_SYSTEM_PROMPT = "You answer short maths questions with one number."


def render_tool_output(action: Action, result: ExecutionResult) -> str:
    r"""A sandbox result as the ```output block a TIR model expects.

    >>> print(render_tool_output(Action("code", "print(6*7)"), ExecutionResult(ok=True, output="42")))
    ```output
    42
    ```
    """
    body = result.output.rstrip("\n")
    if not result.ok:
        error = result.error or "the code failed"
        body = f"{body}\n{error}" if body else error
    if not body:
        body = "[no output; use print() to see values]"
    return f"```output\n{body}\n```"


class TIRMathEnv(AgentEnv):
    r"""Solve a math problem by writing Python that runs in a sandbox, then answer in ``\boxed{}``.

    ## Description

    Tool-integrated reasoning (TIR), as in ToRL, SimpleTIR and VerlTool's VT-Math: each turn the agent
    writes text; fenced ``python`` blocks are executed in a persistent, isolated Python session and
    their output comes back as the next observation; a ``\boxed{...}`` answer ends the episode and is
    checked with math-verify against the gold answer. Tasks come from a procedural generator of
    problems that need computation (big-integer arithmetic, modular arithmetic, combinatorics,
    linear systems, series) or from a GSM8K- or MATH-style JSONL file.

    ## Action Space

    ``UnicodeText(max_action_chars)``: the agent's message (any ``str``). See
    :class:`~agentrl.envs.tirmath.actions.TIRActionSet` for the format.

    ## Observation Space

    ``UnicodeText(max_observation_chars)``. After ``reset``: the problem and the action format. After a
    code turn: `````output ... ````` with the printed output (capped, with a visible marker) or the
    error. After a malformed turn: ``"[error] ..."`` saying what to fix.

    ## Rewards

    1.0 for a final answer equivalent to the gold answer (math-verify), else 0.0. Every other turn: 0.

    ## Starting State

    A task drawn with the env's ``np_random`` (``reset(seed=...)`` is reproducible), or chosen with
    ``options={"task_id": ...}`` / ``{"task_index": i}`` (files); a fresh Python session.

    ## Episode End

    Terminated by a final answer (``info["done_reason"] == "answered"``) or, with
    ``end_on_void_turn=True``, by a turn with neither a complete code block nor an answer
    (``"void_turn"``). Truncated when ``max_turns`` turns are spent (``"max_turns"``).

    ## Arguments

    ```python
    gym.make("AgentRL/TIRMath-v0", families=None, difficulty=(1, 3), dataset=None, procedural_split=None,
             max_turns=10, end_on_void_turn=False, code_timeout_s=10.0, memory_mb=1024, max_output_chars=4000,
             isolation="auto", sandbox="process", sandbox_options=None, render_mode=None)
    ```

    * ``families``: procedural families to draw from (default: all); see ``tasks.FAMILIES``.
    * ``difficulty``: an int 0-5 or an inclusive ``(low, high)`` range. ``0`` is the easy tier: one-step
      problems on single-digit numbers (``What is $5 \\times 3$?``, ``If $x + 3 = 8$, what is $x$?``,
      ``What is $1 + 2 + 3$?``) answered directly in ``\\boxed{}``, so that a small model such as the
      embedded SmolLM2-135M scores above zero. Their first observation is the problem after a worked
      example of the answer format (``\\boxed{100}``, never a right answer), without the code
      instructions. An env of easy problems alone (``difficulty=0``) also reads a reply without ``\\boxed{}``
      or code by its last number (lm-evaluation-harness's GSM8K "flexible-extract"), since a 135M model
      writes "The answer is 7."; the verifier is unchanged. ``1``-``5`` need code.
    * ``dataset``: path of a GSM8K/MATH/simple JSONL file; replaces the generator.
    * ``procedural_split``: ``"train"`` or ``"test"`` draws only that split of the procedural problems (a fixed 70/30
      partition by problem text, ``tasks.problem_split``), so a policy trained on ``"train"`` is
      evaluated on problems it never saw (``python benchmarks/learn_smollm2.py``); None draws all.
    * ``dataset_format``: ``"auto"``, ``"gsm8k"``, ``"math"`` or ``"simple"``. With a dataset the env is a
      :class:`~agentrl.core.dataset.TaskDataset`: ``task_ids()`` lists the file's tasks in order and
      ``agentrl bench --all-tasks`` sweeps them, scored by accuracy.
    * ``isolation``: ``"auto"`` (bubblewrap when installed), ``"bwrap"`` or ``"process"``.
    * ``sandbox``: the sandbox tier: ``"process"`` (default: worker processes on this machine, bubblewrap
      when installed), ``"docker"`` (locked-down containers) or ``"remote"`` (a sandbox server started
      with ``agentrl serve-sandbox``); see :mod:`agentrl.sandboxes.tiers`.
    * ``sandbox_options``: more options for the tier's constructor; ``"remote"`` needs
      ``{"url": "http://127.0.0.1:8787", "token": "..."}`` (and may add ``"options"``, ``"retries"``...).
    * ``sandbox_factory``: build your own sandbox instead (any :class:`~agentrl.sandboxes.base.Sandbox`).

    ## Version History

    * v0: initial release; later added the easy tier ``difficulty=0`` (the default range is unchanged).

    >>> import gymnasium as gym, agentrl
    >>> env = gym.make("AgentRL/TIRMath-v0", families=["modular"], difficulty=1)
    >>> observation, info = env.reset(seed=0)
    >>> info["task_id"].startswith("tirmath/modular/d1/")
    True
    >>> env.close()
    """

    metadata: dict[str, Any] = {**AgentEnv.metadata, "stop_sequences": ("```output",)}

    def __init__(
        self,
        *,
        families: Sequence[str] | None = None,
        difficulty: int | tuple[int, int] = (1, 3),
        dataset: str | os.PathLike[str] | None = None,
        procedural_split: Literal["train", "test"] | None = None,
        dataset_format: Literal["auto", "gsm8k", "math", "simple"] = "auto",
        max_turns: int = 10,
        end_on_void_turn: bool = False,
        code_timeout_s: float = 10.0,
        memory_mb: int = 1024,
        max_output_chars: int = 4000,
        isolation: Literal["auto", "bwrap", "process"] = "auto",
        sandbox: Literal["process", "docker", "remote"] = "process",
        sandbox_options: dict[str, Any] | None = None,
        sandbox_factory: Callable[[], Sandbox] | None = None,
        verify_timeout_s: float = 10.0,
        max_observation_chars: int = 16_000,
        max_action_chars: int = 65_536,
        render_mode: str | None = None,
    ) -> None:
        # Only an env of easy problems alone reads replies leniently: a mixed range keeps one strict format.
        easy_only = dataset is None and level_range(difficulty, DIFFICULTIES) == (EASY, EASY)
        # (not ``split``: an env's ``split`` names a dataset's file, as ``agentrl bench --split`` passes it)
        if dataset is not None and procedural_split is not None:
            raise ValueError(
                "procedural_split= divides the procedural problems; a dataset file is its own split: "
                "drop procedural_split="
            )
        if dataset is not None:
            from agentrl.envs.tirmath.datasets import JsonlMathSource

            task_source: Any = JsonlMathSource(dataset, format=dataset_format)
        else:
            from agentrl.envs.tirmath.tasks import ProceduralMathSource

            task_source = ProceduralMathSource(families=families, difficulty=difficulty, split=procedural_split)
        if sandbox_factory is None:
            sandbox_factory = _session_sandbox_factory(
                sandbox,
                dict(sandbox_options or {}),
                timeout_s=code_timeout_s,
                memory_mb=memory_mb,
                max_output_chars=max_output_chars,
                isolation=isolation,
            )
        super().__init__(
            task_source=task_source,
            action_set=TIRActionSet(last_number_answers=easy_only),
            verifier=MathVerifier(timeout_s=verify_timeout_s),
            sandbox_factory=sandbox_factory,
            max_turns=max_turns,
            max_observation_chars=max_observation_chars,
            max_action_chars=max_action_chars,
            end_on_void_turn=end_on_void_turn,
            render_mode=render_mode,
            system_prompt=EASY_SYSTEM_PROMPT if easy_only else SYSTEM_PROMPT,
            render_result=render_tool_output,
        )

    def dataset_card(self) -> DatasetCard:
        """The dataset file's card (GSM8K, MATH or simple JSONL; scored by accuracy).

        Raises:
            NoTaskDataset: the env draws from the procedural generator (no ``dataset=``).
        """
        path = getattr(self.task_source, "path", None)
        if path is None:
            raise NoTaskDataset(
                "AgentRL/TIRMath-v0 draws problems from its procedural generator, which has no end; to sweep a "
                "dataset give its JSONL file: --env-kwarg dataset=path/to/test.jsonl (GSM8K or MATH rows)"
            )
        fmt = str(getattr(self.task_source, "format", "simple"))
        name = {"gsm8k": "GSM8K", "math": "MATH"}.get(fmt, "math (simple JSONL)")
        return DatasetCard(name=name, path=str(os.path.abspath(path)), metric="accuracy")

    def initial_observation(self, task: Task) -> str:
        """The problem and the action format; an easy-tier problem alone (it ends with its answer format).

        The easy tier leaves the code instructions out: their example program is what a small model
        copies instead of answering. Python blocks still run if the agent writes them.
        """
        if task.difficulty == EASY and task.metadata.get("source") == ID_PREFIX:
            return task.prompt
        return super().initial_observation(task)


def _session_sandbox_factory(
    tier: str, extra: dict[str, Any], *, timeout_s: float, memory_mb: int, max_output_chars: int, isolation: str
) -> Callable[[], Sandbox]:
    """Builds the env's persistent Python session on sandbox ``tier`` (the env's limits, then ``extra``)."""
    from agentrl.core.choices import check_choice
    from agentrl.sandboxes.tiers import TIERS, make_sandbox

    check_choice("sandbox", tier, sorted(TIERS))
    session = {"mode": "session", "timeout_s": timeout_s, "memory_mb": memory_mb, "max_output_chars": max_output_chars}
    if tier == "process":
        options: dict[str, Any] = {**session, "isolation": isolation, **extra}
    elif tier == "remote":
        if not extra.get("url"):
            raise ValueError('sandbox="remote" needs sandbox_options={"url": "http://HOST:PORT", "token": ...}')
        options = {"timeout_s": timeout_s, **extra, "options": {**session, **dict(extra.get("options") or {})}}
    else:
        options = {"timeout_s": timeout_s, "memory_mb": memory_mb, "max_output_chars": max_output_chars, **extra}

    def build() -> Sandbox:
        return make_sandbox(tier, **options)

    return build
