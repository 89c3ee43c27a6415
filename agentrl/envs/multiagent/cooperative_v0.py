r"""``cooperative_v0``: a solver and a checker with a Python sandbox, one joint reward (AEC; after MAGRPO).

After MAGRPO (Liu et al., 2025, "LLM Collaboration With Multi-Agent Reinforcement Learning",
arXiv:2508.04652). Two role agents, ``solver`` and ``checker``, take turns on one TIRMath task:
the solver proposes an answer in ``\boxed{...}`` (optionally after ```python blocks that run in
the TIRMath Python sandbox), the checker reviews (optionally running Python) and writes
``[accept]`` or ``[reject] reason``, the solver revises... The episode ends on ``[accept]`` or
after ``max_rounds`` proposals. Joint reward, given to both at the end: the TIRMath verifier's score
(1/0) of the last proposed answer. Rules and invalid moves: see
:mod:`agentrl.envs.multiagent.cooperative`.

``info`` (every agent): ``invalid_moves``, ``warning``, ``legal_moves`` (example moves for the
agent due: ``["\\boxed{0}", ...]`` for the solver, ``["[accept]", "[reject] ..."]`` for the checker),
``turn``, ``proposals``, ``task_id``; at the end ``outcome`` with ``joint_reward``,
``final_answer``, ``accepted``, ``correct`` and ``reason``.

Example:
    >>> from agentrl.envs.multiagent import cooperative_v0
    >>> env = cooperative_v0.env()
    >>> env.reset(seed=0)
    >>> env.agent_selection
    'solver'
    >>> env.step(f"\\boxed{{{env.game.task.answer}}}")
    >>> env.step("[accept]")
    >>> env.rewards
    {'solver': 1.0, 'checker': 1.0}
    >>> env.close()
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from agentrl.envs.multiagent.base import TextGameEnv
from agentrl.envs.multiagent.cooperative import CHECKER, SOLVER, CooperativeRules, oracle_proposal

__all__ = ["CHECKER", "SOLVER", "CooperativeEnv", "env", "oracle_proposal", "raw_env"]


class CooperativeEnv(TextGameEnv):
    """The AEC env: :class:`~agentrl.envs.multiagent.base.TextGameEnv` on :class:`CooperativeRules`.

    It changes three things of the base env: ``reset(options={"task_id": ...})`` picks a task, a
    second invalid move in a row ends the episode with 0 for *both* agents (a joint loss), and
    ``close()`` closes the Python sandbox.
    """

    game: CooperativeRules

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start an episode on a drawn task (or ``options["task_id"]``), with a fresh Python session."""
        self.game.forced_task_id = (options or {}).get("task_id")
        super().reset(seed=seed, options=options)

    def close(self) -> None:
        """Close the Python sandbox; safe to call twice."""
        self.game.close()

    def _invalid(self, agent: str, reason: str) -> None:
        self._invalid_this_turn += 1
        self.infos[agent]["invalid_moves"] = self.infos[agent].get("invalid_moves", 0) + 1
        if self._invalid_this_turn >= 2:
            self._warnings[agent] = f"invalid move again ({reason}); the episode ends with reward 0 for both"
            self._finish(dict.fromkeys(self.agents, 0.0), reason=f"{agent} made two invalid moves in a row: {reason}")
        else:
            self._warnings[agent] = f"invalid move: {reason}. Try again; a second invalid move ends the episode."
        self._refresh_infos()

    def _set_outcome(self, outcome: dict[str, float], reason: str) -> None:
        self.rewards = {a: float(outcome.get(a, 0.0)) for a in self.agents}
        if reason == "game over":
            reason = "accepted" if self.game.accepted else f"{self.game.max_rounds} proposals made"
        self._outcome = {
            "joint_reward": float(outcome.get(SOLVER, 0.0)),
            "final_answer": self.game.final_answer(),
            "accepted": self.game.accepted,
            "correct": self.game.score() >= 1.0,
            "proposals": len(self.game.proposals),
            "reason": reason,
        }

    def _info(self, agent: str) -> dict[str, Any]:
        return {**super()._info(agent), "proposals": 0, "task_id": None}

    def _refresh_infos(self) -> None:
        super()._refresh_infos()
        task_id = self.game.task.id if self.game.task is not None else None
        for info in self.infos.values():
            info["proposals"] = len(self.game.proposals)
            info["task_id"] = task_id


def raw_env(
    *,
    max_rounds: int = 3,
    families: Sequence[str] | None = None,
    difficulty: int | tuple[int, int] = (1, 3),
    code_timeout_s: float = 10.0,
    memory_mb: int = 1024,
    max_output_chars: int = 4000,
    isolation: Literal["auto", "bwrap", "process"] = "auto",
    verify_timeout_s: float = 10.0,
    render_mode: str | None = None,
) -> CooperativeEnv:
    """The env without wrappers.

    Args:
        max_rounds: the most proposals by the solver.
        families: TIRMath problem families (default: all).
        difficulty: TIRMath difficulty, 1-5 or an inclusive range.
        code_timeout_s: deadline of one Python run.
        memory_mb: memory for the Python session.
        max_output_chars: Python output is cut to this length.
        isolation: the sandbox's isolation (``"auto"``: bubblewrap when installed).
        verify_timeout_s: deadline of one symbolic answer comparison.
        render_mode: ``"ansi"`` or ``"human"``.
    """
    from agentrl.envs.tirmath.env import render_tool_output
    from agentrl.envs.tirmath.tasks import ProceduralMathSource
    from agentrl.envs.tirmath.verify import MathVerifier

    def sandbox_factory() -> Any:
        from agentrl.sandboxes.python import PythonSandbox

        return PythonSandbox(
            mode="session",
            timeout_s=code_timeout_s,
            memory_mb=memory_mb,
            max_output_chars=max_output_chars,
            isolation=isolation,
        )

    rules = CooperativeRules(
        ProceduralMathSource(families=families, difficulty=difficulty),
        MathVerifier(timeout_s=verify_timeout_s),
        sandbox_factory,
        render_tool_output,
        max_rounds=max_rounds,
    )
    # Each proposal and each review is one turn, so 2 * max_rounds turns always suffice.
    return CooperativeEnv(rules, max_turns=2 * max_rounds, render_mode=render_mode)


def env(**kwargs: Any) -> CooperativeEnv:
    """The env (text envs need no PettingZoo wrappers: invalid moves are handled by the env itself)."""
    return raw_env(**kwargs)
