r"""The rules of ``cooperative_v0``: a solver and a checker share one answer and one reward (after MAGRPO).

After MAGRPO (Liu et al., 2025, "LLM Collaboration With Multi-Agent Reinforcement Learning",
arXiv:2508.04652): two cooperating LLM agents are trained with one *joint* reward. Here the team
solves a TIRMath task:

1. the ``solver`` proposes: free text with an answer in ``\boxed{...}`` (required) and optionally
   fenced ```python blocks, which run first in the TIRMath Python sandbox; their ```output is shown
   to both agents;
2. the ``checker`` reviews: it may run Python too (the same session: it can call the solver's
   functions), then writes ``[accept]`` or ``[reject] reason`` (the last verdict tag counts);
3. after a rejection the solver revises, and so on.

The episode ends when the checker accepts, or right after the solver's ``max_rounds``-th proposal
(nothing is left to revise, so it is not reviewed). Both agents then get the same reward: the
TIRMath verifier's score (1/0, math-verify) of the *last proposed* answer. A move that does not
parse (no ``\boxed{}`` from the solver, no verdict from the checker, an unclosed ```python fence,
non-text) is an invalid move: a warning, and the same agent moves again; a second invalid move in
a row ends the episode with reward 0 for both (TextArena's rule, with a joint loss).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentrl.core.task import Task
from agentrl.envs.multiagent.base import IllegalMove

__all__ = ["CHECKER", "SOLVER", "CooperativeRules", "Move", "oracle_proposal"]

SOLVER, CHECKER = "solver", "checker"
_VERDICT = re.compile(r"\[\s*(accept|reject)\s*\]", re.IGNORECASE)


@dataclass(frozen=True)
class Move:
    """A parsed move: who, the text, the Python to run, and the answer (solver) or the verdict (checker)."""

    player: str
    text: str
    code: str
    answer: str = ""
    verdict: str = ""
    reason: str = ""


def oracle_proposal(task: Task, *, with_code: bool = False) -> str:
    r"""A correct proposal for ``task`` from its privileged oracle (optionally with the oracle's Python).

    >>> from agentrl.envs.tirmath.tasks import generate_problem
    >>> oracle_proposal(generate_problem("modular", 1, 0)).startswith("The answer is \\boxed{")
    True
    """
    answer = task.oracle_actions[-1] if task.oracle_actions else f"The answer is \\boxed{{{task.answer}}}."
    if with_code and len(task.oracle_actions) > 1:
        return f"{task.oracle_actions[0]}\n{answer}"
    return answer


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 10)] + " [... cut]"


class CooperativeRules:
    """The game state and rules (a :class:`~agentrl.envs.multiagent.base.GameRules`).

    Args:
        source: the TIRMath task source.
        verifier: scores the final answer (``(task, answer, state) -> Score``).
        sandbox_factory: builds the Python sandbox, on the first code that runs (shared by both agents).
        render_output: turns a sandbox result into a ```output block.
        max_rounds: the most proposals.
        max_message_chars: each message in the shared transcript is cut to this length.
        max_transcript_chars: the transcript in an observation is cut (oldest first) to this length.
    """

    players: tuple[str, ...] = (SOLVER, CHECKER)
    name = "cooperative"

    def __init__(
        self,
        source: Any,
        verifier: Callable[..., Any],
        sandbox_factory: Callable[[], Any],
        render_output: Callable[[Any, Any], str],
        *,
        max_rounds: int = 3,
        max_message_chars: int = 2000,
        max_transcript_chars: int = 9000,
    ) -> None:
        """Store the parts (see the class docstring); no sandbox starts until code runs."""
        if max_rounds < 1:
            raise ValueError(f"max_rounds must be at least 1, got {max_rounds}")
        self.source = source
        self.verifier = verifier
        self.sandbox_factory = sandbox_factory
        self.render_output = render_output
        self.max_rounds = int(max_rounds)
        self.max_message_chars = int(max_message_chars)
        self.max_transcript_chars = int(max_transcript_chars)
        self.sandbox: Any = None
        self._sandbox_used = False
        self.forced_task_id: str | None = None
        self.task: Task | None = None
        self._reset_state()

    def _reset_state(self) -> None:
        self.turn = SOLVER
        self.proposals: list[str] = []
        self.transcript: list[tuple[str, str]] = []
        self.accepted = False
        self._score: float | None = None

    # -- GameRules ---------------------------------------------------------------------------
    def reset(self, rng: np.random.Generator) -> None:
        """Draw a task (or the one in ``forced_task_id``) and clear the shared Python session."""
        task_id, self.forced_task_id = self.forced_task_id, None
        self.task = self.source.get(task_id) if task_id else self.source.sample(rng)
        if self.sandbox is not None and self._sandbox_used:
            self.sandbox.reset()
        self._sandbox_used = False
        self._reset_state()

    def current_player(self) -> str:
        """Whose turn it is."""
        return self.turn

    def legal_moves(self) -> list[str]:
        """Example moves; the first ends the game quickly and deterministically."""
        if self.turn == SOLVER:
            return ["\\boxed{0}", "```python\nprint(6 * 7)\n```\nSo the answer is \\boxed{42}."]
        return ["[accept]", "[reject] the answer is wrong because ..."]

    def parse_move(self, text: str) -> Move:
        """The move ``text`` means, or :class:`IllegalMove` saying what to fix."""
        from agentrl.envs.tirmath.actions import extract_last_boxed, python_code_blocks

        text = text.replace("\x00", "")
        if not text.strip():
            raise IllegalMove("the move is empty")
        blocks, unclosed = python_code_blocks(text)
        if unclosed:
            raise IllegalMove("your ```python block is not closed; end the code with ``` on a line of its own")
        code = "\n".join(blocks)
        if self.turn == SOLVER:
            answer = extract_last_boxed(text)
            if answer is None or not answer.strip():
                raise IllegalMove("propose an answer as \\boxed{...} (Python blocks are optional)")
            return Move(SOLVER, text, code, answer=answer.strip())
        verdicts = list(_VERDICT.finditer(text))
        if not verdicts:
            raise IllegalMove("end your review with [accept] or [reject] followed by the reason")
        last = verdicts[-1]
        verdict = last.group(1).lower()
        reason = text[last.end() :].strip() if verdict == "reject" else ""
        return Move(CHECKER, text, code, verdict=verdict, reason=reason)

    def apply(self, move: Move) -> None:
        """Run the move's Python, record it, and pass the turn (or end the game)."""
        label = f"{move.player}, proposal {len(self.proposals) + 1}" if move.player == SOLVER else move.player
        self.transcript.append((label, _cut(move.text, self.max_message_chars)))
        if move.code:
            self.transcript.append(("python output", _cut(self._run(move.code), self.max_message_chars)))
        if move.player == SOLVER:
            self.proposals.append(move.answer)
            self.turn = CHECKER
        else:
            self.accepted = move.verdict == "accept"
            self.turn = SOLVER

    def is_over(self) -> bool:
        """Accepted, or the last allowed proposal was made."""
        return self.accepted or len(self.proposals) >= self.max_rounds

    def final_answer(self) -> str:
        """The last proposed answer (empty before the first proposal)."""
        return self.proposals[-1] if self.proposals else ""

    def score(self) -> float:
        """The verifier's score of the last proposed answer (cached; 0 with no proposal)."""
        if self._score is None:
            answer = self.final_answer()
            value = 0.0
            if answer and self.task is not None:
                try:
                    value = float(self.verifier(self.task, answer, {}).value)
                except Exception:  # a verifier failure scores 0 instead of crashing the game
                    value = 0.0
            self._score = value
        return self._score

    def outcome(self) -> dict[str, float]:
        """The joint reward: both agents get the score of the last proposed answer."""
        value = self.score()
        return {SOLVER: value, CHECKER: value}

    def observation(self, player: str) -> str:
        """The problem, the shared transcript (proposals, Python output, reviews) and what to do now."""
        assert self.task is not None
        role = (
            "You are the SOLVER. Propose an answer as \\boxed{...}; you may first run Python in ```python blocks "
            "(their output is shown to both of you). If the checker rejects, revise."
            if player == SOLVER
            else "You are the CHECKER. Review the solver's proposal; you may run Python in ```python blocks to "
            "test it. Then write [accept] or [reject] followed by the reason."
        )
        parts = [role, f"Problem:\n{self.task.prompt}"]
        if self.transcript:
            body = "\n\n".join(f"[{who}]\n{text}" for who, text in self.transcript)
            if len(body) > self.max_transcript_chars:
                body = "[... earlier messages cut]\n" + body[-self.max_transcript_chars :]
            parts.append(f"Conversation so far:\n{body}")
        remaining = self.max_rounds - len(self.proposals)
        if self.is_over():
            parts.append(f"The episode is over. Final answer: {self.final_answer() or '(none)'}.")
        elif player == self.turn:
            parts.append(f"Your turn. Proposals left: {remaining}.")
        else:
            parts.append(f"Waiting for the {self.turn}. Proposals left: {remaining}.")
        return "\n\n".join(parts)

    def rules_text(self) -> str:
        """The protocol, as both agents are told it at the start."""
        return (
            f"A solver and a checker solve a math problem together and share one reward: 1 if the last proposed "
            f"answer is correct, else 0. The solver proposes (at most {self.max_rounds} proposals), the checker "
            "accepts or rejects; the episode ends on [accept] or after the last proposal. Both can run Python."
        )

    def clone(self) -> CooperativeRules:
        """An independent copy of the state, without the sandbox (a clone starts its own if it runs code)."""
        twin = copy.copy(self)
        twin.sandbox, twin._sandbox_used = None, False
        twin.proposals, twin.transcript = list(self.proposals), list(self.transcript)
        return twin

    def close(self) -> None:
        """Close the sandbox; safe to call twice."""
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None

    # -- internals ---------------------------------------------------------------------------
    def _run(self, code: str) -> str:
        from agentrl.core.actions import Action
        from agentrl.sandboxes.base import ExecutionRequest

        if self.sandbox is None:
            self.sandbox = self.sandbox_factory()
        self._sandbox_used = True
        result = self.sandbox.execute(ExecutionRequest(code))
        return self.render_output(Action("code", code), result)
