r"""The parts of ``debate_v0`` that need no env: task domains, the reward shaping, the metrics, an oracle.

Multi-agent debate as in MAPoRL (Park et al., 2025, "MAPoRL: Multi-Agent Post-Co-Training for
Collaborative Large Language Models with Reinforcement Learning", arXiv:2502.18439): ``N`` agents
answer the same task, read each other's answers and reasoning, and answer again for ``R`` more
rounds; a verifier scores every answer of every round.

Domains (:func:`make_domain`) reuse the single-agent domains' task sources and verifiers; each
verifier scores a plain final answer, so debate needs no sandbox session:

* ``"tirmath"``: procedural math (or a GSM8K/MATH JSONL file); answer as ``\boxed{...}``, scored
  by math-verify equivalence (:class:`~agentrl.envs.tirmath.verify.MathVerifier`).
* ``"sql"``: text-to-SQL on generated SQLite databases; the schema is in the prompt; answer as
  ``<solution>SELECT ...</solution>``, scored by execution accuracy
  (:class:`~agentrl.envs.sql.verify.SQLVerifier` runs both queries on a private read-only copy).
* ``"search"``: multi-hop questions over the generated encyclopedia, *open book*: the supporting
  passages are in the prompt (debating agents have no search tool); answer as
  ``<answer>...</answer>``, scored by exact match (:class:`~agentrl.envs.search.verify.QAVerifier`).

Reward shaping (:func:`round_rewards`), for agent ``i`` at round ``t = 0..R`` with correctness
``c[t][i]`` in ``{0, 1}``::

    r[t][i] = discount ** (R - t) * (c[t][i] + bonus * c[t][i] * (1 - w[t-1][-i]))

where ``w[t-1][-i]`` is the mean correctness of the *other* agents in the previous round (no bonus
at ``t = 0`` or with one agent). The bonus, a simplified form of MAPoRL's influence-aware
incentives, pays an agent for being right where its peers were wrong (not merely copying a
correct majority); the discount weights the final round most (``discount ** 0 = 1``). With
``shared=True`` every agent receives the mean of that round's rewards.

>>> round_rewards([1.0, 0.0], [0.0, 0.0], round_index=1, rounds=1, discount=0.5, bonus=0.5)
[1.5, 0.0]
>>> round_rewards([1.0, 0.0], None, round_index=0, rounds=1, discount=0.5, bonus=0.5, shared=True)
[0.25, 0.25]
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from agentrl.core.task import Task
from agentrl.core.verify import Score

__all__ = [
    "DOMAINS",
    "DebateDomain",
    "DebateOracle",
    "debate_metrics",
    "make_domain",
    "round_rewards",
    "run_debate",
]

#: The supported task domains.
DOMAINS: tuple[str, ...] = ("tirmath", "sql", "search")


@dataclass(frozen=True)
class DebateDomain:
    """How one single-agent domain plugs into a debate.

    Attributes:
        name: ``"tirmath"``, ``"sql"`` or ``"search"``.
        source: the domain's task source (``sample(rng)``, ``get(task_id)``).
        verifier: ``(task, answer, state) -> Score``.
        answer_format: the instruction that says how to write the final answer.
        example_answer: a well-formed final answer (the env's ``info["legal_moves"][0]``).
        extract: the final answer of a response, or ``None`` when it has none.
        canonical: a normal form of an answer, to count agreement.
        format_answer: writes an answer in the domain's format.
        gold: the privileged answer of a task (for the oracle).
        describe: the task as the agents read it.
    """

    name: str
    source: Any
    verifier: Callable[[Task, str, Mapping[str, Any]], Score]
    answer_format: str
    example_answer: str
    extract: Callable[[str], str | None]
    canonical: Callable[[str], str]
    format_answer: Callable[[str], str]
    gold: Callable[[Task], str]
    describe: Callable[[Task], str]

    def score(self, task: Task, answer: str) -> float:
        """The verifier's score of ``answer`` (0.0 for an empty answer or a verifier failure)."""
        if not answer:
            return 0.0
        try:
            return float(self.verifier(task, answer, {}).value)
        except Exception:  # a verifier must not take the debate down; the answer just scores 0
            return 0.0


def _last_tag(tag: str) -> Callable[[str], str | None]:
    pattern = re.compile(rf"<{tag}>(.*?)(?:</{tag}>|\Z)", re.DOTALL | re.IGNORECASE)

    def extract(text: str) -> str | None:
        found = [m.strip() for m in pattern.findall(text) if m.strip()]
        return found[-1] if found else None

    return extract


def _math_canonical(answer: str) -> str:
    from agentrl.envs.tirmath.verify import exact_rational

    value = exact_rational(answer)
    if value is not None:
        return str(Fraction(value))
    return re.sub(r"\s+", "", answer).strip("$").rstrip(".")


def _math_domain(options: dict[str, Any]) -> DebateDomain:
    from agentrl.envs.tirmath.actions import extract_last_boxed
    from agentrl.envs.tirmath.verify import MathVerifier

    verifier = MathVerifier(timeout_s=float(options.pop("verify_timeout_s", 10.0)))
    if "dataset" in options:
        from agentrl.envs.tirmath.datasets import JsonlMathSource

        source: Any = JsonlMathSource(options.pop("dataset"), format=options.pop("dataset_format", "auto"))
    else:
        from agentrl.envs.tirmath.tasks import ProceduralMathSource

        source = ProceduralMathSource(**options)
    return DebateDomain(
        name="tirmath",
        source=source,
        verifier=verifier,
        answer_format="Reason step by step, then give your final answer as \\boxed{...}.",
        example_answer="\\boxed{0}",
        extract=lambda text: (lambda a: a.strip() if a is not None and a.strip() else None)(extract_last_boxed(text)),
        canonical=_math_canonical,
        format_answer=lambda answer: f"\\boxed{{{answer}}}",
        gold=lambda task: task.answer,
        describe=lambda task: task.prompt,
    )


def _sql_domain(options: dict[str, Any]) -> DebateDomain:
    from agentrl.envs.sql.databases import schema_text
    from agentrl.envs.sql.tasks import ProceduralSQLSource
    from agentrl.envs.sql.verify import SQLVerifier

    budget = int(options.pop("schema_budget_chars", 6000))
    verifier = SQLVerifier(timeout_s=float(options.pop("score_timeout_s", 30.0)))

    def describe(task: Task) -> str:
        schema = schema_text(task.metadata["db_path"], budget_chars=budget)
        return f"Database schema (with a few sample rows per table):\n{schema}\n\nQuestion: {task.prompt}"

    return DebateDomain(
        name="sql",
        source=ProceduralSQLSource(**options),
        verifier=verifier,
        answer_format=(
            "Reason step by step, then give your final answer as one SQLite query in <solution>...</solution>; "
            "it is scored by running it: its result must equal the correct query's result."
        ),
        example_answer="<solution>SELECT 0</solution>",
        extract=_last_tag("solution"),
        canonical=lambda sql: " ".join(sql.lower().split()).rstrip(";").strip(),
        format_answer=lambda sql: f"<solution>{sql}</solution>",
        gold=lambda task: str(task.metadata.get("gold_sql", task.answer)),
        describe=describe,
    )


def _search_domain(options: dict[str, Any]) -> DebateDomain:
    from agentrl.envs.search.tasks import ProceduralSearchSource
    from agentrl.envs.search.verify import QAVerifier, normalize_answer

    verifier = QAVerifier(options.pop("mode", "em"))
    source = ProceduralSearchSource(**options)

    def describe(task: Task) -> str:
        corpus = source.corpus
        passages = [corpus.passage(pid) for pid in sorted(task.metadata.get("supporting", []))]
        text = "\n\n".join(f"({p.title}) {p.text}" for p in passages)
        return f"Passages:\n{text}\n\nQuestion: {task.prompt}"

    return DebateDomain(
        name="search",
        source=source,
        verifier=verifier,
        answer_format="Reason step by step, then give your final short answer as <answer>...</answer>.",
        example_answer="<answer>unknown</answer>",
        extract=_last_tag("answer"),
        canonical=normalize_answer,
        format_answer=lambda answer: f"<answer>{answer}</answer>",
        gold=lambda task: task.answer,
        describe=describe,
    )


def make_domain(name: str, task_kwargs: Mapping[str, Any] | None = None) -> DebateDomain:
    r"""The :class:`DebateDomain` called ``name``; ``task_kwargs`` configure its task source.

    ``tirmath``: ``families``, ``difficulty``, ``dataset``, ``dataset_format``, ``verify_timeout_s``.
    ``sql``: ``schemas``, ``difficulty``, ``db_seeds``, ``cache_dir``, ``schema_budget_chars``,
    ``score_timeout_s``. ``search``: ``kinds``, ``corpus_seed``, ``n_entities``, ``mode`` (``"em"``/``"f1"``).

    Raises:
        ValueError: an unknown domain (with a suggestion) or bad task options.

    >>> make_domain("tirmath", {"families": ["modular"]}).example_answer
    '\\boxed{0}'
    """
    from agentrl.core.choices import check_choice

    name = check_choice("domain", name, DOMAINS)
    options = dict(task_kwargs or {})
    builders = {"tirmath": _math_domain, "sql": _sql_domain, "search": _search_domain}
    return builders[name](options)


def round_rewards(
    correct: Sequence[float],
    previous: Sequence[float] | None,
    *,
    round_index: int,
    rounds: int,
    discount: float,
    bonus: float,
    shared: bool = False,
) -> list[float]:
    """Each agent's reward for one round (the formula is in the module docstring).

    Args:
        correct: this round's correctness of each agent (verifier scores in ``[0, 1]``).
        previous: the previous round's correctness (``None`` in round 0).
        round_index: ``t``, from 0 to ``rounds``.
        rounds: ``R``, the discussion rounds after the first answer.
        discount: the per-round discount towards the final round.
        bonus: the weight of being right where the other agents were wrong in the previous round.
        shared: give every agent the mean.

    >>> round_rewards([1.0, 1.0, 0.0], [1.0, 0.0, 0.0], round_index=2, rounds=2, discount=0.5, bonus=1.0)
    [2.0, 1.5, 0.0]
    """
    scale = discount ** (rounds - round_index)
    n = len(correct)
    rewards = []
    for i, c in enumerate(correct):
        others_right = 1.0
        if previous is not None and n > 1:
            others_right = (sum(previous) - previous[i]) / (n - 1)
        rewards.append(scale * (c + bonus * c * (1.0 - others_right)))
    if shared and rewards:
        mean = sum(rewards) / len(rewards)
        rewards = [mean] * len(rewards)
    return rewards


def debate_metrics(answers: Sequence[Sequence[str]], correct: Sequence[Sequence[float]]) -> dict[str, Any]:
    """The debate's metrics from every round's canonical answers and correctness (``[round][agent]``).

    * ``accuracy_per_round``: the mean correctness of all agents, per round;
    * ``final_accuracy``: the last round's;
    * ``majority_answer`` and ``consensus``: the most common non-empty final answer and the fraction of
      agents that gave it (0.0 when nobody answered);
    * ``majority_correct``: whether an agent that gave the majority answer was right;
    * ``wrong_to_right`` / ``right_to_wrong``: how often an agent changed from a wrong (right) answer in
      one round to a right (wrong) one in the next, summed over agents and rounds.

    >>> m = debate_metrics([["1", "2", "2"], ["2", "2", "2"]], [[0, 1, 1], [1, 1, 1]])
    >>> m["accuracy_per_round"], m["consensus"], m["wrong_to_right"], m["right_to_wrong"]
    ([0.6666666666666666, 1.0], 1.0, 1, 0)
    """
    accuracy = [sum(row) / len(row) if row else 0.0 for row in correct]
    final = list(answers[-1]) if answers else []
    counts = Counter(a for a in final if a)
    majority, votes = counts.most_common(1)[0] if counts else ("", 0)
    majority_correct = bool(
        majority and any(a == majority and c >= 1.0 for a, c in zip(final, correct[-1], strict=False))
    )
    up = down = 0
    for before, after in itertools.pairwise(correct):
        for b, a in zip(before, after, strict=False):
            up += int(b < 1.0 <= a)
            down += int(a < 1.0 <= b)
    return {
        "accuracy_per_round": accuracy,
        "final_accuracy": accuracy[-1] if accuracy else 0.0,
        "majority_answer": majority,
        "consensus": votes / len(final) if final else 0.0,
        "majority_correct": majority_correct,
        "wrong_to_right": up,
        "right_to_wrong": down,
    }


class DebateOracle:
    """Answers every round correctly with the task's privileged gold answer.

    >>> from agentrl.envs.multiagent import debate_v0
    >>> env = debate_v0.parallel_env(num_agents=2, rounds=1)
    >>> observations, infos = env.reset(seed=0)
    >>> oracle = DebateOracle(env)
    >>> metrics = run_debate(env, oracle.act)["agent_0"]["metrics"]
    >>> metrics["accuracy_per_round"]
    [1.0, 1.0]
    >>> env.close()
    """

    def __init__(self, env: Any) -> None:
        """Read the task from ``env`` (a ``debate_v0`` env) whenever asked to act."""
        self.env = env

    def act(self, agent: str, observation: Any, info: Mapping[str, Any]) -> str:
        """A correct response for ``agent`` in the current round."""
        domain, task = self.env.domain, self.env.task
        return f"I checked this carefully. {domain.format_answer(domain.gold(task))}"


def run_debate(
    env: Any,
    policy: Callable[[str, Any, Mapping[str, Any]], Any],
    *,
    seed: int | None = None,
    reset: bool = False,
) -> dict[str, Any]:
    """Play one debate with ``policy(agent, observation, info) -> action`` for every agent; return the last infos.

    The env is reset (with ``seed``) when ``reset`` is true or it has no live agents.
    """
    if reset or not env.agents:
        observations, infos = env.reset(seed=seed)
    else:
        observations, infos = env.last_observations, env.last_infos
    final: dict[str, Any] = dict(infos)
    while env.agents:
        actions = {agent: policy(agent, observations[agent], infos[agent]) for agent in env.agents}
        observations, _rewards, _terms, _truncs, infos = env.step(actions)
        final.update(infos)
    return final
