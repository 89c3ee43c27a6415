"""One seat of a turn-based multi-agent text game as a single-agent Gymnasium env.

:class:`SingleAgentEnv` puts a learner in one seat of a PettingZoo AEC text game
(:class:`~agentrl.envs.multiagent.base.TextGameEnv`) and plays every other seat with fixed
opponents, so any single-agent tool (``agentrl bench``, trainers, ``check_env``) can use the game:

* ``reset`` starts a game and plays the opponents until it is the learner's turn;
* ``step(action)`` plays the learner's move (text), then the opponents' moves;
* the reward is the learner's (+1 win, -1 loss, 0 draw at the end; 0 before);
* ``terminated`` at the end of the game, ``truncated`` when the game's turn budget runs out;
* it is on the episode contract (:class:`~agentrl.core.episode.EpisodeEnv`, ``episode_kind =
  "seat"``): ``info`` has the contract's keys, ``task_id`` (the game's name), ``turn`` and
  ``turns_left`` (the learner's turns; the budget is twice the game's move budget, as each move may
  take one invalid try), ``action_error`` (an illegal move's warning), ``tool_error``,
  ``void_turn``, ``done_reason`` (``"game_over"``, or ``"max_turns"`` when the game's budget ran
  out), ``reward_components``; and the seat's own: ``seat``, ``legal_moves``, ``invalid_moves``,
  ``outcome`` (``{}`` until the end), ``result``, ``warning``, ``game_turn`` (moves played in the
  game), ``opponent_moves`` (this step's) and ``opponent_errors``;
* the oracle (:meth:`~agentrl.core.episode.EpisodeEnv.oracle_action`) is the game's best built-in
  player in the learner's seat.

Version history of the ``AgentRL-MA/<game>-vs-<opponent>`` ids: v0 reported the game's move count
as ``info["turn"]``; it still does (``legacy_turn_info=True``, deprecated: read ``game_turn``). v1
(issue 19): ``turn`` is the contract's, the learner's turns taken.

LLM agents read ``env.unwrapped.system_prompt`` (the game's rules) and ``metadata["stop_sequences"]``
(none). Opponents are agents bound to a :class:`~agentrl.envs.multiagent.opponents.PlayerView` of their
seat, exactly as in :func:`~agentrl.bench.league.play_game`.

>>> env = make_single_agent("tictactoe_v0", opponent="minimax")
>>> observation, info = env.reset(seed=0)
>>> info["seat"], info["legal_moves"][:3]
('player_0', ['[1]', '[2]', '[3]'])
>>> observation, reward, terminated, truncated, info = env.step("[5]")
>>> reward, terminated
(0.0, False)

Gymnasium ids are opt-in: :func:`register_single_agent_ids` registers
``AgentRL-MA/<game>-vs-<opponent>-v0`` (for example ``AgentRL-MA/tictactoe-vs-minimax-v0``) and
``-v1`` for ``gymnasium.make``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agentrl.core.episode import EpisodeEnv, Turn
from agentrl.core.spaces import UnicodeText
from agentrl.envs.multiagent.opponents import PlayerView, game_rules_text, make_player, seed_player

__all__ = ["SingleAgentEnv", "make_single_agent", "register_single_agent_ids"]

_SEAT_MODES = ("alternate", "random")


class SingleAgentEnv(EpisodeEnv[str, Any]):
    """A learner's seat of an AEC text game against fixed opponents.

    ## Description

    The learner plays one seat of a PettingZoo AEC text game; every other seat is played by a fixed
    opponent (``random``, ``scripted``, the game's ``best`` player, or any agent), so single-agent tools
    (``agentrl bench``, the trainers, Stable-Baselines3 on text) use the game unchanged.

    ## Action Space

    The game's: a move as text (``[3]``, ``[2 3]``, ``[bet]``...); a reply with more text around the move
    is read the same way.

    ## Observation Space

    ``UnicodeText``: the board or the learner's private view, the opponents' last moves and the legal
    moves (``info["legal_moves"]``).

    ## Rewards

    0 until the game ends; then +1 for a win, -1 for a loss, 0 for a draw (the learner's seat).

    ## Starting State

    A new game from ``reset(seed=...)``; the opponents move until it is the learner's turn.

    ## Episode End

    Terminated at the end of the game (``done_reason="game_over"``; two invalid moves in a row lose it),
    truncated when the game's move budget runs out (``"max_turns"``).

    ## Version History

    v1: ``info["turn"]`` is the contract's, the learner's turns taken. v0 (deprecated) reports the game's
    move count there (read ``info["game_turn"]``).

    Args:
        env: the AEC env, a function making it (``tictactoe_v0.env``), or a name from
            ``MULTIAGENT_ENVS`` (``"tictactoe_v0"``; ``env_kwargs`` go to its ``env()``).
        opponent: one player for every other seat, a dict ``seat -> player``, or a player name
            (``"random"``, ``"scripted"``, ``"minimax"``, ``"module:Class"``; see
            :func:`~agentrl.envs.multiagent.opponents.make_player`).
        learner_seat: a seat name (``"player_0"``), ``"alternate"`` (seats in turn: a reset with seed
            ``s`` takes seat ``s mod n``, an unseeded reset the seat after the previous one) or
            ``"random"`` (a seat drawn from the env's RNG at each reset). ``reset(options={"seat": ...})``
            overrides it for one game.
        env_kwargs: keyword arguments for the env when it is given by name.
        render_mode: ``"ansi"`` (``render()`` returns the board) or ``None``.
        legacy_turn_info: ``info["turn"]`` is the game's move count, as in v0 (deprecated; the
            contract's ``turn``, the learner's turns taken, is the default and v1's).
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"], "stop_sequences": ()}
    episode_kind = "seat"
    budget_done_reason = "max_turns"

    def __init__(
        self,
        env: Any,
        opponent: Any = "random",
        *,
        learner_seat: str = "player_0",
        env_kwargs: Mapping[str, Any] | None = None,
        render_mode: str | None = None,
        legacy_turn_info: bool = False,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.render_mode = render_mode
        self.aec = _make_aec(env, env_kwargs)
        # each learner move may take one invalid try first (a second loses): the game ends first
        super().__init__(max_turns=2 * int(getattr(self.aec, "max_turns", 500)) + 1)
        self.legacy_turn_info = bool(legacy_turn_info)
        if self.legacy_turn_info:
            self.deprecated_info = {
                "turn": "v0: the game's move count; read info['game_turn'] (v1: the learner's turns)"
            }
        self.seats = list(self.aec.possible_agents)
        if learner_seat not in (*self.seats, *_SEAT_MODES):
            raise ValueError(f"learner_seat must be one of {[*self.seats, *_SEAT_MODES]}, got {learner_seat!r}")
        self.learner_seat = learner_seat
        self.opponents = self._opponents(opponent)
        self.seat = self.seats[0] if learner_seat in _SEAT_MODES else learner_seat
        self.observation_space = self.aec.observation_space(self.seat)
        self.action_space = self.aec.action_space(self.seat)
        if not isinstance(self.observation_space, UnicodeText):  # every TextGameEnv has text spaces
            raise TypeError(f"expected a text game with UnicodeText spaces, got {self.observation_space!r}")
        name = str(self.aec.metadata.get("name", "game"))
        self.metadata = {**self.metadata, "name": name}
        self._resets = 0
        self._pending_reward = 0.0
        self._gain = 0.0
        self._oracle: Any = None
        self._game_seed = 0

    # -- opponents -------------------------------------------------------------------------------
    def _opponents(self, opponent: Any) -> dict[str, Any]:
        """Seat -> player for every seat (the learner's seat is skipped at play time)."""
        if isinstance(opponent, Mapping):
            unknown = [s for s in opponent if s not in self.seats]
            if unknown:
                raise ValueError(f"unknown seats {unknown}; the env's seats are {self.seats}")
            table = {seat: _resolve(player) for seat, player in opponent.items()}
            if self.learner_seat in _SEAT_MODES:
                missing = [s for s in self.seats if s not in table]
                if missing:
                    raise ValueError(
                        f"with learner_seat={self.learner_seat!r} every seat needs an opponent; no {missing}"
                    )
            else:
                missing = [s for s in self.seats if s != self.learner_seat and s not in table]
                if missing:
                    raise ValueError(f"no opponent for seats {missing}")
            return table
        if isinstance(opponent, str):
            return {seat: make_player(opponent) for seat in self.seats}
        return dict.fromkeys(self.seats, opponent)

    @property
    def system_prompt(self) -> str:
        """The game's rules (LLM agents read ``env.unwrapped.system_prompt``)."""
        return game_rules_text(self.aec)

    # -- the episode contract's hooks ------------------------------------------------------------
    def begin_episode(self, options: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """Start a game, pick the learner's seat and play the opponents up to the learner's turn."""
        seed = self.reset_seed
        if seed is not None:
            self._resets = seed  # "alternate": seed s plays seat s mod n, so seeded resets replay exactly
        if "seat" in options:
            if options["seat"] not in self.seats:
                raise ValueError(f"options['seat'] must be one of {self.seats}, got {options['seat']!r}")
            self.seat = options["seat"]
        elif self.learner_seat == "alternate":
            self.seat = self.seats[self._resets % len(self.seats)]
        elif self.learner_seat == "random":
            self.seat = self.seats[int(self.np_random.integers(len(self.seats)))]
        else:
            self.seat = self.learner_seat
        self._resets += 1
        game_seed = int(self.np_random.integers(2**31 - 1))
        self._game_seed = game_seed
        self._oracle = None
        self.aec.reset(seed=game_seed)
        seeded = set()
        for index, seat in enumerate(self.seats):
            player = self.opponents.get(seat)
            if seat == self.seat or player is None:
                continue
            if id(player) not in seeded:
                seed_player(player, game_seed + index + 1)
                seeded.add(id(player))
            bind = getattr(player, "bind", None)
            if callable(bind):
                bind(PlayerView(self.aec, seat))
            reset = getattr(player, "reset", None)
            if callable(reset):
                reset(dict(self.aec.infos.get(seat, {})))
        # The learner's reward from the opponents' opening moves (non-zero only when an opponent
        # ends the game before the learner moves, e.g. by two invalid moves): paid by the next step.
        self._pending_reward, moves, errors = self._play_opponents()
        return self._observe(moves, errors)

    def act(self, turn: Turn[str]) -> None:
        """Play the learner's move, then the opponents' moves until the learner's turn or the end."""
        aec = self.aec
        self._gain, self._pending_reward = self._pending_reward, 0.0
        if self._over():  # the opponents ended the game before the learner's first move
            turn.observation, turn.info = self._observe([], [])
            turn.terminated = bool(aec.terminations.get(self.seat))
            turn.truncated = not turn.terminated
        else:
            invalid_before = int(aec.infos.get(self.seat, {}).get("invalid_moves", 0))
            aec.step(turn.action)
            self._gain += float(aec.rewards.get(self.seat, 0.0))
            more, moves, errors = self._play_opponents()
            self._gain += more
            turn.observation, turn.info = self._observe(moves, errors)
            if turn.info["invalid_moves"] > invalid_before:
                turn.action_error = str(turn.info["warning"] or "invalid move")
            turn.terminated = bool(aec.terminations.get(self.seat, False))
            turn.truncated = bool(aec.truncations.get(self.seat, False)) and not turn.terminated
        if turn.terminated:
            turn.done_reason = "game_over"
        elif turn.truncated:
            turn.done_reason = self.budget_done_reason
        if turn.ended:
            turn.reward_components = {"outcome": self._gain}

    def step_reward(self, turn: Turn[str]) -> float:
        """The learner's reward this step (+1/-1/0 at the end of the game)."""
        return self._gain

    def oracle_action(self) -> str:
        """The game's best built-in player's move for the learner's seat (privileged: it reads the game)."""
        from agentrl.core.errors import ResetNeeded

        if not self.episode_active:
            raise ResetNeeded("no game in progress: call env.reset() first")
        if self._oracle is None:
            self._oracle = make_player("best")
            seed_player(self._oracle, self._game_seed + 10_007)
            self._oracle.bind(PlayerView(self.aec, self.seat))
            self._oracle.reset(dict(self.aec.infos.get(self.seat, {})))
        return str(self._oracle.act(self.aec.observe(self.seat), self.aec.infos[self.seat]))

    def current_task_id(self) -> str | None:
        """The game's name."""
        return str(self.metadata.get("name", "game"))

    def release(self) -> None:
        """Close the AEC env."""
        self.aec.close()

    def render(self) -> str | None:  # type: ignore[override]  # gymnasium: an unbound TypeVar
        """The game as text (``ansi``); nothing without a render mode."""
        if self.render_mode == "ansi":
            return self.aec.render()
        return None

    # -- internals -------------------------------------------------------------------------------
    def _over(self) -> bool:
        aec = self.aec
        return bool(aec.terminations.get(self.seat, True) or aec.truncations.get(self.seat, True))

    def _play_opponents(self) -> tuple[float, list[dict[str, Any]], list[dict[str, Any]]]:
        """Opponents' moves until the learner is due; the learner's reward from them, the moves, errors."""
        aec = self.aec
        reward = 0.0
        moves: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        guard = 0
        while not self._over() and aec.agent_selection != self.seat:
            seat = aec.agent_selection
            player = self.opponents[seat]
            try:
                action = player.act(aec.observe(seat), aec.infos[seat])
            except Exception as exc:  # an opponent's bug is its invalid move
                errors.append({"seat": seat, "error": f"{type(exc).__name__}: {exc}"})
                action = None
            moves.append({"seat": seat, "action": action if isinstance(action, str) else repr(action)})
            aec.step(action)
            reward += float(aec.rewards.get(self.seat, 0.0))
            guard += 1
            if guard > 100_000:
                raise RuntimeError("opponents made 100000 moves without the learner's turn coming")
        return reward, moves, errors

    def _observe(self, moves: list[dict[str, Any]], errors: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
        aec = self.aec
        info_in = aec.infos.get(self.seat, {})
        outcome = info_in.get("outcome")
        info = {
            "seat": self.seat,
            "legal_moves": list(info_in.get("legal_moves", [])),
            "invalid_moves": int(info_in.get("invalid_moves", 0)),
            "outcome": dict(outcome) if outcome else {},  # always a dict: vector envs batch infos by type
            "result": (outcome or {}).get("result", {}).get(self.seat) if outcome else None,
            "warning": info_in.get("warning"),
            "game_turn": int(info_in.get("turn", 0)),
            "opponent_moves": moves,
            "opponent_errors": errors,
        }
        if self.legacy_turn_info:
            info["turn"] = info["game_turn"]  # v0's meaning (deprecated)
        return str(aec.observe(self.seat)), info


def _resolve(player: Any) -> Any:
    return make_player(player) if isinstance(player, str) else player


def _make_aec(env: Any, env_kwargs: Mapping[str, Any] | None) -> Any:
    if isinstance(env, str):
        from agentrl.envs.multiagent import MULTIAGENT_ENVS, load

        kind = MULTIAGENT_ENVS.get(env, ("aec", ""))[0]
        if kind != "aec":
            raise ValueError(f"{env} is a {kind} env; a single-agent seat needs a turn-based (aec) game")
        return load(env).env(**dict(env_kwargs or {}))
    if env_kwargs:
        raise ValueError("env_kwargs apply only to an env given by name")
    made = env() if callable(env) else env
    if not hasattr(made, "possible_agents") or not hasattr(made, "agent_iter"):
        raise TypeError(f"expected a PettingZoo AEC env, got {type(made).__name__}")
    return made


def make_single_agent(
    name: str,
    opponent: Any = "minimax",
    *,
    learner_seat: str = "player_0",
    render_mode: str | None = None,
    legacy_turn_info: bool = False,
    **env_kwargs: Any,
) -> SingleAgentEnv:
    """A :class:`SingleAgentEnv` for a game by name: ``make_single_agent("tictactoe_v0", "minimax")``.

    ``env_kwargs`` go to the game's ``env()`` (``max_turns``, ``random_first``, ...).
    """
    return SingleAgentEnv(
        name,
        opponent,
        learner_seat=learner_seat,
        env_kwargs=env_kwargs,
        render_mode=render_mode,
        legacy_turn_info=legacy_turn_info,
    )


def register_single_agent_ids(
    names: Iterable[str] | None = None,
    opponents: Iterable[str] = ("random", "scripted", "minimax"),
    versions: Iterable[int] = (0,),
) -> list[str]:
    """Register ``AgentRL-MA/<game>-vs-<opponent>-v<N>`` Gymnasium ids for ``versions``; returns them.

    ``names`` default to every turn-based game in ``MULTIAGENT_ENVS``; ``<game>`` drops the
    ``_v0`` suffix (``tictactoe_v0`` -> ``AgentRL-MA/tictactoe-vs-minimax-v0``). v0 keeps the game's
    move count in ``info["turn"]`` (deprecated); v1 has the contract's ``turn``. Registering again
    is harmless. Nothing is registered on import.
    """
    from agentrl.envs.multiagent import MULTIAGENT_ENVS, register_seat_id

    chosen = list(names) if names is not None else [n for n, (kind, _) in MULTIAGENT_ENVS.items() if kind == "aec"]
    return [
        register_seat_id(name, opponent, version) for name in chosen for opponent in opponents for version in versions
    ]

