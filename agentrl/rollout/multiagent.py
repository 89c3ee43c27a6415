"""Multi-agent rollouts: PettingZoo games with one or more seats played by the learner policy.

:class:`MultiAgentRollout` plays a PettingZoo env (AEC: turns; parallel: every agent at once) with
each seat given to one of:

* ``"learner"``: the policy being trained (one shared policy for every learner seat); each learner
  seat yields its own token-level :class:`~agentrl.rollout.trajectory.Trajectory` (its own prompt,
  completions, observations, loss mask, logprobs) with its own rewards;
* ``"snapshot"``: a frozen copy of the learner (a second :class:`TokenPolicy`, which the trainer
  refreshes every ``--snapshot-every`` steps); it plays like the learner but yields nothing;
* a fixed player by name: ``"random"`` (a uniformly random legal move), ``"scripted"``,
  ``"minimax"``, ``"best"`` or ``"module:Class"`` (see
  :func:`~agentrl.envs.multiagent.opponents.make_player`).

A request is one game: ``env.reset(seed=request.seed)``, and the fixed players are seeded from the
same seed, so the members of a GRPO group (same seed, see
:func:`~agentrl.rollout.engine.group_requests`) start from the same state and differ only in what
the policy samples. A learner seat's trajectory keeps the request with ``group_id`` set to
``"<group>/<seat>"``, so advantages compare a seat's returns with the same seat's in the group.

Rewards: each reward the env gives a learner seat goes to that seat's last completion (the turn it
answers). ``team_reward=True`` gives every learner seat the mean return of all seats instead
(MAGRPO's joint reward, Liu et al. 2025, arXiv:2508.04652): the difference is added to the seat's
last turn and its own return is kept in that turn's ``info["own_return"]``.

The trajectories' ``reset_info`` has ``seat``, ``seats`` (who played each seat), ``env``,
``moved`` and ``seat_return`` (a seat on which the game ended before it moved comes back ok with no
turns, which trainers skip); the
last turn's ``info`` is the env's last info for the seat (the games put ``outcome`` there, with
``result``: ``win``, ``loss`` or ``draw`` per seat).

Example:
    >>> import tempfile
    >>> from agentrl.llm.tiny import build_tiny_model
    >>> from agentrl.llm.transformers_backend import TransformersBackend
    >>> from agentrl.rollout import RolloutConfig, group_requests
    >>> backend = TransformersBackend(build_tiny_model(tempfile.mkdtemp() + "/m"))
    >>> config = RolloutConfig(num_envs=4, max_new_tokens=4, sampling_seed=0)
    >>> rollout = MultiAgentRollout(multiagent_env_fn("tictactoe_v0"), backend,
    ...                             seats="learner,random", config=config)
    >>> trajectories = rollout.run(group_requests([0], group_size=2))
    >>> [(t.request.group_id, t.reset_info["seat"], t.ok) for t in trajectories]
    [('0/player_0', 'player_0', True), ('0/player_0', 'player_0', True)]
    >>> rollout.close(); backend.close()
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agentrl.core.errors import AgentRLError
from agentrl.core.serialize import json_safe
from agentrl.llm.base import ChatMessage, GenerationConfig
from agentrl.rollout.chat import ChatTokenizer
from agentrl.rollout.engine import EpisodeFailed, RolloutConfig, TokenPolicy, generate_timed
from agentrl.rollout.errors import RolloutConfigError, RolloutMisuse
from agentrl.rollout.trajectory import RolloutRequest, Trajectory, TurnRecord

__all__ = [
    "LEARNER",
    "SNAPSHOT",
    "LegalMoveRandomPlayer",
    "MultiAgentRollout",
    "multiagent_env_fn",
    "multiagent_env_name",
    "parse_seats",
]

LEARNER = "learner"
SNAPSHOT = "snapshot"
_PREFIX = "agentrl.envs.multiagent."
_MAX_MOVES = 100_000


def multiagent_env_name(env_id: str) -> str | None:
    """The multi-agent env's name when ``env_id`` names one (``agentrl.envs.multiagent.X`` or ``X``), else ``None``.

    Example:
        >>> multiagent_env_name("agentrl.envs.multiagent.tictactoe_v0"), multiagent_env_name("AgentRL/SQL-v0")
        ('tictactoe_v0', None)
    """
    from agentrl.envs.multiagent import MULTIAGENT_ENVS

    name = env_id[len(_PREFIX) :] if env_id.startswith(_PREFIX) else env_id
    if name in MULTIAGENT_ENVS:
        return name
    if env_id.startswith(_PREFIX):
        from agentrl.core.choices import did_you_mean

        raise ValueError(
            f"unknown multi-agent env {env_id!r}; choose from "
            f"{[_PREFIX + n for n in sorted(MULTIAGENT_ENVS)]}{did_you_mean(name, list(MULTIAGENT_ENVS))}"
        )
    return None


def multiagent_env_fn(name: str, **env_kwargs: Any) -> Callable[[], Any]:
    """A zero-argument builder of the multi-agent env ``name`` (its ``parallel_env`` or ``env``)."""
    from agentrl.envs.multiagent import MULTIAGENT_ENVS, load

    module = load(name)
    kind = MULTIAGENT_ENVS[name][0]
    builder = module.parallel_env if kind == "parallel" and hasattr(module, "parallel_env") else module.env
    return functools.partial(builder, **env_kwargs)


def parse_seats(
    spec: str | Sequence[str] | Mapping[str, str] | None, agents: Sequence[str], opponent: str
) -> dict[str, str]:
    """Who plays each seat: ``seat -> "learner" | "snapshot" | player name``.

    ``spec`` is a comma-separated list in seat order (``"learner,random"``), a list, a mapping, or
    empty/``None``: the learner in the first seat and ``opponent`` in the others.

    Example:
        >>> parse_seats("learner,random", ["player_0", "player_1"], "random")
        {'player_0': 'learner', 'player_1': 'random'}
        >>> parse_seats(None, ["a", "b", "c"], "snapshot")
        {'a': 'learner', 'b': 'snapshot', 'c': 'snapshot'}
    """
    agents = list(agents)
    if spec is None or (isinstance(spec, str) and not spec.strip()):
        table = {a: (LEARNER if i == 0 else opponent) for i, a in enumerate(agents)}
    elif isinstance(spec, Mapping):
        unknown = [s for s in spec if s not in agents]
        if unknown:
            raise RolloutConfigError(f"unknown seats {unknown}; the env's seats are {agents}")
        table = {a: str(spec.get(a, opponent)) for a in agents}
    else:
        names = [s.strip() for s in spec.split(",")] if isinstance(spec, str) else [str(s).strip() for s in spec]
        if len(names) != len(agents):
            raise RolloutConfigError(
                f"--seats names {len(names)} players ({','.join(names)}) but the env has {len(agents)} seats "
                f"{agents}; give one per seat, e.g. --seats {','.join([LEARNER] + ['random'] * (len(agents) - 1))}"
            )
        table = dict(zip(agents, names, strict=True))
    if any(not who for who in table.values()):
        raise RolloutConfigError(f"a seat has an empty player name: {table}")
    if LEARNER not in table.values():
        raise RolloutConfigError(f"no seat is played by the learner: {table}; name at least one seat 'learner'")
    return table


class LegalMoveRandomPlayer:
    """A uniformly random move from ``info["legal_moves"]`` (the ``random`` player of parallel envs).

    Example:
        >>> LegalMoveRandomPlayer(seed=0).act("", {"legal_moves": ["[1]", "[2]"]}) in ("[1]", "[2]")
        True
    """

    name = "random"

    def __init__(self, seed: int | None = None) -> None:
        import numpy as np

        self.rng = np.random.default_rng(seed)

    def act(self, observation: Any, info: Mapping[str, Any]) -> str:
        """One of the legal moves at random ("" when the env lists none)."""
        moves = list(info.get("legal_moves") or [])
        return str(moves[int(self.rng.integers(len(moves)))]) if moves else ""


@dataclass
class _Seat:
    """A policy-played seat in one game: its trajectory under construction."""

    name: str
    policy: Any
    trajectory: Trajectory
    has_system: bool = False
    system: str = ""
    started: bool = False
    open_turn: tuple[tuple[int, int], str, str, list[int], int] | None = None  # span, text, finish, ids, version
    pending: float = 0.0
    total: float = 0.0
    finished: bool = False
    terminated: bool = False
    truncated: bool = False
    last_info: dict[str, Any] = field(default_factory=dict)


class _Truncate(AgentRLError):
    """The engine cuts the game short (context or turn budget)."""


class MultiAgentRollout:
    """Collect learner-seat trajectories from a PettingZoo env (AEC or parallel).

    It has the :class:`~agentrl.rollout.engine.RolloutEngine` surface a trainer uses (``run``,
    ``close``, ``config``, ``policy_version``, ``stats``), so a trainer runs on it unchanged; a
    request yields ``trajectories_per_request`` trajectories (one per learner seat), in seat order.

    Args:
        env_fn: a zero-argument callable that builds the env (see :func:`multiagent_env_fn`).
        policy: the learner's :class:`TokenPolicy`.
        seats: who plays each seat (see :func:`parse_seats`).
        opponent: the player of the seats ``seats`` leaves unnamed.
        snapshot_policy: the :class:`TokenPolicy` of ``"snapshot"`` seats (required when there are any).
        team_reward: give every learner seat the mean return of all seats (MAGRPO).
        alternate_seats: rotate who plays each seat from one group to the next (:meth:`seating`), so a learner
            named for the first seat plays first in half the games of a two-player game and second in the
            other half: its Elo is then not the first mover's advantage.
        chat: the policy's :class:`ChatTokenizer` (default: from the policy's tokenizer).
        config: a :class:`RolloutConfig`; ``num_envs`` games run at once.
    """

    def __init__(
        self,
        env_fn: Callable[[], Any],
        policy: TokenPolicy,
        *,
        seats: str | Sequence[str] | Mapping[str, str] | None = None,
        opponent: str = "random",
        snapshot_policy: TokenPolicy | None = None,
        team_reward: bool = False,
        alternate_seats: bool = False,
        chat: ChatTokenizer | None = None,
        config: RolloutConfig | None = None,
    ) -> None:
        if not callable(getattr(policy, "agenerate_ids", None)):
            raise TypeError(f"the policy must continue token ids (agenerate_ids); {type(policy).__name__} cannot")
        self.env_fn = env_fn
        self.policy = policy
        self.config = config or RolloutConfig()
        if chat is None:
            if getattr(policy, "tokenizer", None) is None:
                raise ValueError(
                    "pass chat=ChatTokenizer.from_pretrained(<the model's folder>): the policy has no tokenizer"
                )
            chat = ChatTokenizer.for_backend(policy)
        self.chat = chat
        probe = env_fn()
        self.parallel = not hasattr(probe, "agent_iter")
        if not hasattr(probe, "possible_agents"):
            raise TypeError(f"expected a PettingZoo AEC or parallel env, got {type(probe).__name__}")
        self.env_name = str(getattr(probe, "metadata", {}).get("name", type(probe).__name__))
        self.seats = parse_seats(seats, list(probe.possible_agents), opponent)
        self._idle: list[Any] = [probe]
        if SNAPSHOT in self.seats.values() and snapshot_policy is None:
            raise RolloutConfigError("a seat is played by 'snapshot' but no snapshot_policy was given")
        self.snapshot_policy = snapshot_policy
        for who in self.seats.values():
            if who not in (LEARNER, SNAPSHOT):
                self._make_player(who, 0)  # a typo in a player name fails here, not in every game
        self.team_reward = bool(team_reward)
        self.alternate_seats = bool(alternate_seats)
        self.learner_seats = [s for s, who in self.seats.items() if who == LEARNER]
        self.trajectories_per_request = len(self.learner_seats)
        self.policy_version = 0
        self.stats: dict[str, float] = dict.fromkeys(
            ("episodes", "failed", "retried", "turns", "policy_tokens", "env_tokens", "generate_s", "env_s"), 0
        )
        self._collecting = False
        self._closed = False

    # ------------------------------------------------------------------ public API

    def run(self, requests: Sequence[RolloutRequest]) -> list[Trajectory]:
        """Play one game per request; return the learner seats' trajectories in request then seat order."""
        return asyncio.run(self.arun(requests))

    async def arun(self, requests: Sequence[RolloutRequest]) -> list[Trajectory]:
        """:meth:`run` in a running event loop. Failed trajectories are left out unless ``config.keep_failed``."""
        if self._closed:
            raise RolloutMisuse("the rollout is closed; make a new MultiAgentRollout")
        if self._collecting:
            raise RolloutMisuse("this rollout is already collecting; run one collection at a time")
        self._collecting = True
        try:
            items = [r if isinstance(r, RolloutRequest) else RolloutRequest(seed=r) for r in requests]
            limit = asyncio.Semaphore(self.config.num_envs)

            async def one(position: int, request: RolloutRequest) -> list[Trajectory]:
                async with limit:
                    return await self._game(position, request)

            games = await asyncio.gather(*(one(p, r) for p, r in enumerate(items)))
        finally:
            self._collecting = False
        kept = [t for game in games for t in game if t.ok or self.config.keep_failed]
        return kept

    def seating(self, request: RolloutRequest) -> dict[str, str]:
        """Who plays each seat in ``request``'s game: ``seats``, rotated by its group with ``alternate_seats``.

        Every member of a GRPO group sits the same way (one start state per group); group ``k`` shifts the
        players ``k`` seats along (``seed`` stands in for a request without a group).
        """
        if not self.alternate_seats:
            return dict(self.seats)
        names, players = list(self.seats), list(self.seats.values())
        key = request.group_id if request.group_id is not None else request.seed
        shift = int(key or 0) % len(names)
        return {names[i]: players[(i - shift) % len(names)] for i in range(len(names))}

    def set_players(self, players: Mapping[str, str]) -> None:
        """Give non-learner seats new players for the next collections (a league's opponent of the step).

        ``players`` maps seats to ``"snapshot"`` or a fixed player's name; learner seats stay the
        learner's (the number of trajectories per request does not change between collections).
        """
        if self._collecting:
            raise RolloutMisuse("set_players while collecting; change the players between runs")
        for seat, who in players.items():
            if seat not in self.seats:
                raise RolloutConfigError(f"unknown seat {seat!r}; the env's seats are {list(self.seats)}")
            if LEARNER in (who, self.seats[seat]):
                raise RolloutConfigError(f"seat {seat!r}: learner seats are fixed when the rollout is built")
            if who == SNAPSHOT and self.snapshot_policy is None:
                raise RolloutConfigError("a seat is played by 'snapshot' but no snapshot_policy was given")
            if who != SNAPSHOT:
                self._make_player(who, 0)  # an unknown name fails here
        self.seats.update({seat: str(who) for seat, who in players.items()})

    def close(self) -> None:
        """Close the idle envs; idempotent (the policies belong to the caller)."""
        if self._closed:
            return
        self._closed = True
        envs, self._idle = self._idle, []
        for env in envs:
            try:
                env.close()
            except Exception:  # closing is best effort
                pass

    def __enter__(self) -> MultiAgentRollout:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ one game

    async def _game(self, position: int, request: RolloutRequest) -> list[Trajectory]:
        attempt = 1
        while True:
            trajectories = await self._attempt(position, request, attempt)
            if all(t.ok for t in trajectories):
                self.stats["episodes"] += len(trajectories)
                return trajectories
            self.stats["failed"] += 1
            if attempt > self.config.retries:
                return trajectories
            self.stats["retried"] += 1
            attempt += 1

    async def _attempt(self, position: int, request: RolloutRequest, attempt: int) -> list[Trajectory]:
        started = time.perf_counter()
        players: dict[str, _Seat] = {}
        seating = self.seating(request)
        for seat, who in seating.items():
            if who in (LEARNER, SNAPSHOT):
                group = None if request.group_id is None else f"{request.group_id}/{seat}"
                trajectory = Trajectory(
                    request=replace(request, group_id=group),
                    attempts=attempt,
                    policy_version=self.policy_version,
                    task_id=f"{self.env_name}/{seat}",
                    reset_info={"seat": seat, "seats": dict(seating), "env": self.env_name},
                )
                policy = self.policy if who == LEARNER else self.snapshot_policy
                players[seat] = _Seat(seat, policy, trajectory)
        learners = [players[s] for s, who in seating.items() if who == LEARNER]
        totals: dict[str, float] = {}  # every seat's return in this game (for the team reward)
        env = None
        try:
            env = self._idle.pop() if self._idle else await self._env_call(learners, self.env_fn)
            fixed = {
                seat: self._make_player(who, None if request.seed is None else request.seed + index + 1)
                for index, (seat, who) in enumerate(seating.items())
                if who not in (LEARNER, SNAPSHOT)
            }
            if self.parallel:
                await self._play_parallel(env, request, players, fixed, position, totals)
            else:
                await self._play_aec(env, request, players, fixed, position, totals)
            self._settle(players, totals, [state.name for state in learners])
            self._idle.append(env)
        except Exception as exc:
            reason = str(exc) if isinstance(exc, EpisodeFailed) else f"{type(exc).__name__}: {exc}"
            for state in learners:
                state.trajectory.status, state.trajectory.failure = "failed", reason
            if env is not None:
                try:
                    env.close()
                except Exception:
                    pass
        for state in learners:
            t = state.trajectory
            t.timings["total"] = time.perf_counter() - started
            t.staleness = self.policy_version - (t.turns[-1].policy_version if t.turns else t.policy_version)
        return [state.trajectory for state in learners]

    async def _play_aec(
        self,
        env: Any,
        request: RolloutRequest,
        players: dict[str, _Seat],
        fixed: dict[str, Any],
        position: int,
        totals: dict[str, float],
    ) -> None:
        learners = list(players.values())
        await self._env_call(learners, env.reset, seed=request.seed, options=request.options)
        self._bind(env, fixed)
        for seat in players.values():
            seat.system = _system_prompt(env, seat.name)
        moves = 0
        while env.agents:
            moves += 1
            if moves > _MAX_MOVES:
                raise EpisodeFailed(f"the game made {_MAX_MOVES} moves without ending")
            name = env.agent_selection
            observation, _, terminated, truncated, info = env.last()
            if terminated or truncated:
                if name in players:
                    seat = players[name]
                    seat.finished, seat.terminated, seat.truncated = True, bool(terminated), bool(truncated)
                    seat.last_info = dict(info)
                env.step(None)
                continue
            if name in players:
                try:
                    action: Any = await self._turn(players[name], observation, info, position)
                except _Truncate:
                    self._truncate_all(players)
                    return
            else:
                action = await self._env_call(learners, fixed[name].act, observation, info)
            await self._env_call(learners, env.step, action)
            for seat in players.values():
                gained = float(env.rewards.get(seat.name, 0.0))
                seat.pending += gained
                seat.total += gained
            _add(totals, env.rewards)

    async def _play_parallel(
        self,
        env: Any,
        request: RolloutRequest,
        players: dict[str, _Seat],
        fixed: dict[str, Any],
        position: int,
        totals: dict[str, float],
    ) -> None:
        learners = list(players.values())
        observations, infos = await self._env_call(learners, env.reset, seed=request.seed, options=request.options)
        self._bind(env, fixed)
        for seat in players.values():
            seat.system = str(getattr(getattr(env, "unwrapped", env), "system_prompt", "") or "")
        rounds = 0
        while env.agents:
            rounds += 1
            if rounds > _MAX_MOVES:
                raise EpisodeFailed(f"the game ran {_MAX_MOVES} rounds without ending")
            live = list(env.agents)
            ours = [players[a] for a in live if a in players]
            try:
                texts = await asyncio.gather(
                    *(self._turn(seat, observations[seat.name], infos.get(seat.name, {}), position) for seat in ours)
                )
            except _Truncate:
                self._truncate_all(players)
                return
            actions: dict[str, Any] = {seat.name: text for seat, text in zip(ours, texts, strict=True)}
            for agent in live:
                if agent not in players:
                    actions[agent] = await self._env_call(learners, fixed[agent].act, observations[agent], infos[agent])
            observations, rewards, terminations, truncations, infos = await self._env_call(learners, env.step, actions)
            for seat in players.values():
                gained = float(rewards.get(seat.name, 0.0))
                seat.pending += gained
                seat.total += gained
                if terminations.get(seat.name) or truncations.get(seat.name):
                    seat.finished = True
                    seat.terminated = bool(terminations.get(seat.name))
                    seat.truncated = bool(truncations.get(seat.name)) and not seat.terminated
                    seat.last_info = dict(infos.get(seat.name, {}))
            _add(totals, rewards)

    # ------------------------------------------------------------------ a policy's turn

    async def _turn(self, seat: _Seat, observation: Any, info: Mapping[str, Any], position: int) -> str:
        """Append the seat's observation (closing its previous turn), sample its move, return the text."""
        trajectory = seat.trajectory
        text = _text(observation)
        config = self.config
        if not seat.started:
            messages: list[ChatMessage] = [{"role": "system", "content": seat.system}] if seat.system else []
            messages.append({"role": config.observation_role, "content": text})
            seat.has_system = bool(seat.system)
            ids = self.chat.prompt_ids(messages)
            trajectory.append_env(ids)
            trajectory.prompt_length = len(ids)
            trajectory.messages = messages
            self.stats["env_tokens"] += len(ids)
            seat.started = True
        else:
            if seat.open_turn is not None:
                ids = self.chat.observation_ids(
                    text, seat.open_turn[3], has_system=seat.has_system, role=config.observation_role
                )
                span = trajectory.append_env(ids)
                self.stats["env_tokens"] += len(ids)
                trajectory.messages.append({"role": config.observation_role, "content": text})
                self._close_turn(seat, span, dict(info), terminated=False, truncated=False)
        if config.max_turns is not None and len(trajectory.turns) >= config.max_turns:
            raise _Truncate("max_turns")
        budget = config.max_new_tokens
        if config.max_context_tokens is not None:
            budget = min(budget, config.max_context_tokens - len(trajectory.token_ids))
            if budget < 1:
                raise _Truncate("context")
        generation_config = GenerationConfig(
            max_tokens=budget,
            temperature=config.temperature,
            top_p=config.top_p,
            stop=tuple(config.stop),
            seed=self._turn_seed(seat, position),
        )
        generation = await generate_timed(
            seat.policy, trajectory, generation_config, config.generate_timeout_s, self.stats
        )
        if generation.finish_reason == "error":
            raise EpisodeFailed(f"the backend returned an error for seat {seat.name}")
        if not generation.token_ids or len(generation.token_ids) != len(generation.logprobs):
            raise EpisodeFailed("the backend returned no token ids/logprobs; token-level rollouts need them")
        span = trajectory.append_policy(generation.token_ids, generation.logprobs)
        completion = self.chat.completion_text(generation.token_ids)
        trajectory.messages.append({"role": "assistant", "content": completion})
        seat.open_turn = (
            span,
            generation.text,
            generation.finish_reason,
            list(generation.token_ids),
            self.policy_version,
        )
        self.stats["policy_tokens"] += len(generation.token_ids)
        return str(generation.text)

    def _close_turn(
        self, seat: _Seat, observation_span: tuple[int, int], info: dict[str, Any], *, terminated: bool, truncated: bool
    ) -> None:
        if seat.open_turn is None:
            return
        span, action, finish_reason, _, version = seat.open_turn
        seat.open_turn = None
        seat.trajectory.turns.append(
            TurnRecord(
                completion_span=span,
                observation_span=observation_span,
                action=action,
                finish_reason=finish_reason,
                reward=seat.pending,
                terminated=terminated,
                truncated=truncated,
                void_turn=bool(info.get("void_turn", False)),
                info=json_safe({**info, "seat": seat.name}),
                policy_version=version,
            )
        )
        seat.pending = 0.0
        self.stats["turns"] += 1

    def _settle(self, players: dict[str, _Seat], totals: Mapping[str, float], learner_seats: Sequence[str]) -> None:
        """Close every seat's last turn at the end of the game; apply the team reward."""
        for seat in players.values():
            end = len(seat.trajectory.token_ids)
            truncated = seat.truncated or not seat.finished
            self._close_turn(
                seat,
                (end, end),
                seat.last_info,
                terminated=seat.terminated,
                truncated=truncated and not seat.terminated,
            )
        if self.team_reward and totals:
            team = sum(totals.values()) / len(totals)
            for name in learner_seats:
                seat = players[name]
                if seat.trajectory.turns:
                    last = seat.trajectory.turns[-1]
                    last.reward += team - seat.total
                    last.info = {**last.info, "own_return": seat.total, "team_return": team}
        for seat in players.values():
            # A seat the game ended on before it moved (an opponent won at once) has nothing to learn
            # from: it comes back ok with no turns (trainers skip it), its return in reset_info.
            seat.trajectory.reset_info.update(moved=bool(seat.trajectory.turns), seat_return=seat.total)

    def _truncate_all(self, players: dict[str, _Seat]) -> None:
        """The engine ends the game early: every seat's last turn is truncated (or it fails without one)."""
        for seat in players.values():
            seat.finished, seat.terminated, seat.truncated = True, False, True
            if seat.trajectory.turns or seat.open_turn is not None:
                continue
            seat.trajectory.status = "failed"
            seat.trajectory.failure = "the first prompt leaves no room to generate (context)"

    # ------------------------------------------------------------------ helpers

    def _make_player(self, who: str, seed: int | None) -> Any:
        if self.parallel and who == "random":
            return LegalMoveRandomPlayer(seed)
        from agentrl.envs.multiagent.opponents import make_player

        return make_player(who, seed=seed)

    def _bind(self, env: Any, fixed: Mapping[str, Any]) -> None:
        from agentrl.envs.multiagent.opponents import PlayerView

        for seat, player in fixed.items():
            bind = getattr(player, "bind", None)
            if callable(bind):
                bind(PlayerView(env, seat) if not self.parallel else env)
            reset = getattr(player, "reset", None)
            if callable(reset) and not self.parallel:
                reset(dict(env.infos.get(seat, {})))

    async def _env_call(self, seats: Sequence[_Seat], fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run an env or player call in a thread with the step deadline; its time goes to every learner seat."""
        started = time.perf_counter()
        try:
            return await asyncio.wait_for(asyncio.to_thread(fn, *args, **kwargs), self.config.step_timeout_s)
        except TimeoutError as exc:
            raise EpisodeFailed(f"an env call timed out after {self.config.step_timeout_s:g}s") from exc
        finally:
            elapsed = time.perf_counter() - started
            self.stats["env_s"] += elapsed
            for seat in seats:
                seat.trajectory.timings["env"] += elapsed

    def _turn_seed(self, seat: _Seat, position: int) -> int | None:
        if self.config.sampling_seed is None:
            return None
        t = seat.trajectory
        key = f"{self.config.sampling_seed}:{position}:{t.request.index}:{t.attempts}:{seat.name}:{len(t.turns)}"
        return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") >> 1


def _add(totals: dict[str, float], rewards: Mapping[str, Any]) -> None:
    """Add a step's rewards to every seat's return in this game."""
    for agent, value in rewards.items():
        totals[agent] = totals.get(agent, 0.0) + float(value)


def _system_prompt(env: Any, seat: str) -> str:
    from agentrl.envs.multiagent.opponents import PlayerView

    try:
        return PlayerView(env, seat).system_prompt
    except Exception:
        return ""


def _text(observation: Any) -> str:
    if isinstance(observation, str):
        return observation
    raise EpisodeFailed(f"multi-agent rollouts need text observations, got {type(observation).__name__}")
