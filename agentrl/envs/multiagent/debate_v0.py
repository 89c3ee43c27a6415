r"""``debate_v0``: multi-agent debate, natively a PettingZoo ``ParallelEnv`` (after MAPoRL).

After MAPoRL (Park et al., 2025, "MAPoRL: Multi-Agent Post-Co-Training for Collaborative Large
Language Models with Reinforcement Learning", arXiv:2502.18439). ``num_agents`` agents
(``agent_0``, ``agent_1``, ...) get the same task; in round 0 each answers alone; in each of the
``rounds`` discussion rounds that follow, each reads the task again together with every agent's
previous response (answer *and* reasoning, each cut to ``max_response_chars``) and answers again.
Every round all agents act at once and the domain's verifier scores each extracted final answer.

* Domains: ``"tirmath"`` (``\boxed{}``, math-verify), ``"sql"`` (``<solution>``, execution
  accuracy) and ``"search"`` (open book, ``<answer>``, exact match); see
  :mod:`agentrl.envs.multiagent.debate`.
* Rewards, per round ``t = 0..R`` (``R = rounds``), with ``c`` the verifier score::

      r[t][i] = discount ** (R - t) * (c[t][i] + bonus * c[t][i] * (1 - mean_{j != i} c[t-1][j]))

  (no bonus in round 0); ``shared_reward=True`` gives every agent the round's mean.
* ``infos[agent]`` each round: ``round``, ``answer``, ``correct``, ``invalid_action`` (why the action
  was refused, else ``None``), ``reward_components``, ``legal_moves`` (one well-formed example
  answer) and ``task_id``; after the last round also ``metrics`` (see
  :func:`~agentrl.envs.multiagent.debate.debate_metrics`: ``accuracy_per_round``, ``consensus``,
  ``wrong_to_right``, ``right_to_wrong``, ...).
* Bad actions (``None``, non-strings, empty text, a missing agent): that agent's answer for the round
  is empty and scores 0, and its info says why; the debate goes on.
* PettingZoo's convention: :func:`parallel_env` is the native parallel env (all agents act at once);
  :func:`env` is the same game as an ``AECEnv`` (``parallel_to_aec``: the agents act one after the other
  and the round is scored once the last has acted).

Example:
    >>> from agentrl.envs.multiagent import debate_v0
    >>> env = debate_v0.parallel_env(num_agents=2, rounds=1)
    >>> observations, infos = env.reset(seed=0)
    >>> observations["agent_0"].startswith("You are agent_0 of 2")
    True
    >>> _, rewards, terms, _, infos = env.step({"agent_0": "\\boxed{0}", "agent_1": None})
    >>> infos["agent_1"]["invalid_action"]
    'the action must be text, got NoneType'
    >>> env.close()
    >>> aec = debate_v0.env(num_agents=2, rounds=0)  # the AEC form
    >>> aec.reset(seed=0)
    >>> aec.agent_selection
    'agent_0'
    >>> aec.step("\\boxed{0}")
    >>> aec.agent_selection
    'agent_1'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec, parallel_to_aec_wrapper

from agentrl.core.spaces import TextObservation, UnicodeText
from agentrl.envs.multiagent.debate import DebateDomain, DebateOracle, debate_metrics, make_domain, round_rewards

__all__ = ["DebateEnv", "DebateOracle", "env", "parallel_env", "raw_env"]

_MAX_OBSERVATION = 65_536


class DebateEnv(ParallelEnv):
    """N agents answer one task, then read each other's responses and answer again, for ``rounds`` rounds.

    Args:
        domain: ``"tirmath"``, ``"sql"`` or ``"search"``.
        num_agents: how many agents debate (at least 1).
        rounds: discussion rounds after the first answer (so ``rounds + 1`` answering rounds).
        shared_reward: give every agent the mean reward of the round.
        discount: round ``t``'s reward is scaled by ``discount ** (rounds - t)``.
        bonus: weight of being right where the other agents were wrong in the previous round.
        task_kwargs: options of the domain's task source (see :func:`~agentrl.envs.multiagent.debate.make_domain`).
        max_response_chars: each previous response shown to the agents is cut to this many characters.
        max_action_chars: longer actions are cut to this length before they are read.
        render_mode: ``"ansi"`` or ``"human"``.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "human"], "name": "debate_v0", "is_parallelizable": True}

    def __init__(
        self,
        domain: str = "tirmath",
        num_agents: int = 3,
        rounds: int = 2,
        *,
        shared_reward: bool = False,
        discount: float = 0.5,
        bonus: float = 0.5,
        task_kwargs: Mapping[str, Any] | None = None,
        max_response_chars: int = 1500,
        max_action_chars: int = 65_536,
        render_mode: str | None = None,
    ) -> None:
        """Build the domain and the spaces (see the class docstring for the arguments)."""
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        if int(num_agents) < 1:
            raise ValueError(f"num_agents must be at least 1, got {num_agents}")
        if int(rounds) < 0:
            raise ValueError(f"rounds must be at least 0, got {rounds}")
        if not 0.0 <= float(discount) <= 1.0:
            raise ValueError(f"discount must be in [0, 1], got {discount}")
        self.domain: DebateDomain = make_domain(domain, task_kwargs)
        self.rounds = int(rounds)
        self.shared_reward = bool(shared_reward)
        self.discount = float(discount)
        self.bonus = float(bonus)
        self.max_response_chars = int(max_response_chars)
        self.max_action_chars = int(max_action_chars)
        self.render_mode = render_mode
        self.possible_agents = [f"agent_{i}" for i in range(int(num_agents))]
        self._observation_spaces = {a: UnicodeText(_MAX_OBSERVATION) for a in self.possible_agents}
        self._action_spaces = {a: UnicodeText(self.max_action_chars) for a in self.possible_agents}
        self.np_random = np.random.default_rng()
        self._seeded = False
        self.agents: list[str] = []
        self.task: Any = None
        self.round = 0
        self.responses: list[dict[str, str]] = []
        self.answers: list[list[str]] = []
        self.correct: list[list[float]] = []
        self.last_observations: dict[str, TextObservation] = {}
        self.last_infos: dict[str, dict[str, Any]] = {}

    # -- spaces ------------------------------------------------------------------------------
    def observation_space(self, agent: str) -> UnicodeText:
        """Text (the same object on every call)."""
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> UnicodeText:
        """Text (the same object on every call)."""
        return self._action_spaces[agent]

    # -- the parallel API ------------------------------------------------------------------------
    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, TextObservation], dict[str, dict[str, Any]]]:
        """Draw a task (``options={"task_id": ...}`` picks one) and return the round-0 observations."""
        if seed is not None or not self._seeded:
            self.np_random = np.random.default_rng(seed)
            self._seeded = True
        task_id = (options or {}).get("task_id")
        self.task = self.domain.source.get(task_id) if task_id else self.domain.source.sample(self.np_random)
        self.agents = list(self.possible_agents)
        self.round = 0
        self.responses, self.answers, self.correct = [], [], []
        observations = {a: self._observe(a) for a in self.agents}
        infos = {a: self._base_info(0) for a in self.agents}
        self.last_observations, self.last_infos = observations, infos
        return observations, infos

    def step(self, actions: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
        """Score every agent's response for this round; move to the next round or end the debate."""
        if not self.agents:
            return {}, {}, {}, {}, {}
        actions = actions if isinstance(actions, Mapping) else {}
        t = self.round
        texts: dict[str, str] = {}
        answers: list[str] = []
        correct: list[float] = []
        invalid: dict[str, str | None] = {}
        warnings: dict[str, str | None] = {}
        for agent in self.agents:
            text, invalid[agent] = self._read(agent, actions)
            answer = self.domain.extract(text) if text else None
            missing = None if answer else f"no final answer found; {self.domain.answer_format}"
            texts[agent], warnings[agent] = text, invalid[agent] or missing
            answers.append(answer or "")
            correct.append(self.domain.score(self.task, answer or ""))
        self.responses.append(texts)
        self.answers.append([self.domain.canonical(a) if a else "" for a in answers])
        self.correct.append(correct)
        previous = self.correct[-2] if t > 0 else None
        values = round_rewards(
            correct,
            previous,
            round_index=t,
            rounds=self.rounds,
            discount=self.discount,
            bonus=self.bonus,
            shared=self.shared_reward,
        )
        rewards = {a: float(v) for a, v in zip(self.agents, values, strict=True)}
        done = t >= self.rounds
        infos: dict[str, dict[str, Any]] = {}
        for index, agent in enumerate(self.agents):
            info = self._base_info(t)
            info.update(
                answer=answers[index],
                correct=correct[index],
                invalid_action=invalid.get(agent),
                warning=warnings[agent],
                reward_components={"correct": correct[index], "scale": self.discount ** (self.rounds - t)},
            )
            infos[agent] = info
        if done:
            metrics = debate_metrics(self.answers, self.correct)
            metrics["invalid_actions"] = sum(1 for row in self.responses for text in row.values() if not text)
            for info in infos.values():
                info["metrics"] = metrics
                info["legal_moves"] = []
        else:
            self.round += 1
        observations = {a: self._observe(a, final=done) for a in self.agents}
        terminations = dict.fromkeys(self.agents, done)
        truncations = dict.fromkeys(self.agents, False)
        self.last_observations, self.last_infos = observations, infos
        if done:
            self.agents = []
        if self.render_mode == "human":
            self.render()
        return observations, rewards, terminations, truncations, infos

    def render(self) -> str | None:
        """The task and every response so far, as text (printed for ``"human"``)."""
        if self.task is None:
            return None if self.render_mode == "human" else ""
        lines = [f"Task {self.task.id}: {self.task.prompt}"]
        for t, row in enumerate(self.responses):
            for index, (agent, text) in enumerate(row.items()):
                mark = "right" if self.correct[t][index] >= 1.0 else "wrong"
                lines.append(f"[round {t}] {agent} ({mark}): {_cut(text, 300) or '(no valid response)'}")
        text = "\n".join(lines)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def state(self) -> str:
        """A global text description (the task id, the round, every canonical answer so far)."""
        return f"task={getattr(self.task, 'id', None)} round={self.round} answers={self.answers}"

    def close(self) -> None:
        """Nothing to release (verifiers hold no sessions); safe to call twice."""

    # -- internals ---------------------------------------------------------------------------
    def _read(self, agent: str, actions: Mapping[str, Any]) -> tuple[str, str | None]:
        """The agent's text (cut to ``max_action_chars``) and why it was refused, if it was."""
        if agent not in actions:
            return "", "no action was given for this agent"
        action = actions[agent]
        if not isinstance(action, str):
            return "", f"the action must be text, got {type(action).__name__}"
        text = action.replace("\x00", "")[: self.max_action_chars]
        if not text.strip():
            return "", "the action is empty"
        return text, None

    def _base_info(self, t: int) -> dict[str, Any]:
        return {
            "round": t,
            "rounds": self.rounds,
            "task_id": self.task.id,
            "legal_moves": [self.domain.example_answer],
            "answer": "",
            "correct": 0.0,
            "invalid_action": None,
            "warning": None,
        }

    def _observe(self, agent: str, final: bool = False) -> TextObservation:
        n = len(self.possible_agents)
        head = (
            f"You are {agent} of {n} agents who each answer the same task, then read each other's "
            f"responses and answer again ({self.rounds + 1} answering rounds in all)."
        )
        parts = [head, f"Task:\n{self.domain.describe(self.task)}"]
        if final:
            index = self.possible_agents.index(agent)
            verdict = "right" if self.correct[-1][index] >= 1.0 else "wrong"
            parts.append(f"The debate is over. Your final answer was {verdict}.")
        elif self.responses:
            shown = []
            for other, text in self.responses[-1].items():
                who = "you" if other == agent else other
                shown.append(f"--- {other} ({who}) ---\n{_cut(text, self.max_response_chars) or '(no valid response)'}")
            parts.append(
                f"Round {self.round} of {self.rounds}. The responses of the previous round:\n" + "\n".join(shown)
            )
            parts.append(
                "Weigh the other agents' answers and reasoning critically: keep your answer if you are "
                "sure of it, change it if they convinced you. " + self.domain.answer_format
            )
        else:
            parts.append(self.domain.answer_format)
        return TextObservation(_cut("\n\n".join(parts), _MAX_OBSERVATION))


def _cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with a visible marker."""
    if len(text) <= limit:
        return text
    marker = " [... cut]"
    return text[: max(0, limit - len(marker))] + marker


def parallel_env(
    domain: str = "tirmath",
    num_agents: int = 3,
    rounds: int = 2,
    shared_reward: bool = False,
    discount: float = 0.5,
    task_kwargs: Mapping[str, Any] | None = None,
    render_mode: str | None = None,
    **kwargs: Any,
) -> DebateEnv:
    """The debate env (PettingZoo's convention for a parallel env); ``kwargs``: ``bonus``, ``max_response_chars``..."""
    return DebateEnv(
        domain,
        num_agents,
        rounds,
        shared_reward=shared_reward,
        discount=discount,
        task_kwargs=task_kwargs,
        render_mode=render_mode,
        **kwargs,
    )


def raw_env(**kwargs: Any) -> AECEnv:
    """The AEC form without wrappers: :func:`parallel_env` under PettingZoo's ``parallel_to_aec_wrapper``."""
    return parallel_to_aec_wrapper(parallel_env(**kwargs))


def env(**kwargs: Any) -> AECEnv:
    """The debate as a PettingZoo ``AECEnv`` (PettingZoo's convention; ``parallel_env()`` is the parallel form).

    ``parallel_to_aec(parallel_env(**kwargs))``: agents act one at a time in ``agent_selection`` order and
    each round is scored when the last agent has acted; ``env.unwrapped`` is the :class:`DebateEnv`.
    ``kwargs`` are :func:`parallel_env`'s.
    """
    return parallel_to_aec(parallel_env(**kwargs))
