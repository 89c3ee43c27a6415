"""The turn-based multi-agent text games under RLlib, through its PettingZoo wrapper.

RLlib's default models take numeric spaces, not text, so :class:`NumericGameWrapper` (a PettingZoo
``BaseWrapper``) re-expresses a :class:`~agentrl.envs.multiagent.base.TextGameEnv`:

* **actions** are ``Discrete(n)`` over a fixed move list, each entry the text move the game
  parses: tic-tac-toe ``[1]``..``[9]``, Connect Four ``[1]``..``[7]``, Nim every ``[heap count]``
  pair, Kuhn poker ``[check] [bet] [call] [fold]``, negotiation ``[accept] [walk]`` and every
  ``[propose a b c]``. An index whose move is illegal now goes to the game as that text, so the
  game's own rule applies (a warning, and a second invalid move in a turn loses);
* **observations** are a float ``Box`` in ``[0, 1]``, read from the game's state
  (``env.unwrapped.game``), always from the observing player's side so that one shared policy
  can play both seats: tic-tac-toe 2x9 planes (mine, theirs), Connect Four 2x42 planes, Nim the
  heap sizes (scaled) and their binary digits (the nim-sum is a XOR of those), Kuhn poker the own
  card one-hot and the betting so far. Any other game (negotiation, or a game of your own) gets
  a generic encoding of its *text* observation: character trigrams hashed (CRC32, so stable across
  processes) into 256 buckets, L2-normalised. It is cheap and deterministic; a sentence-embedding
  model would be richer but costs seconds per env and a model download, so it is left to
  ``features=``;
* with ``action_mask=True`` the observation is ``Dict(observations=Box, action_mask=Box)`` as
  RLlib's ``ActionMaskingTorchRLModule`` (new API stack, PPO) expects; the mask marks the legal
  moves of the agent whose turn it is (all ones for an agent that is not due, whose action is
  never used). The mask is int8, as PettingZoo's ``api_test`` and ``Discrete.sample(mask)`` want.

>>> from agentrl.envs.multiagent import tictactoe_v0
>>> env = NumericGameWrapper(tictactoe_v0.env(), action_mask=True)
>>> env.reset(seed=0)
>>> env.action_space("player_0")
Discrete(9)
>>> obs = env.observe("player_0")
>>> obs["observations"].shape, int(obs["action_mask"].sum())
((18,), 9)
>>> env.step(4)                                 # "[5]", the centre
>>> env.observe("player_1")["observations"][9 + 4]   # player_1 sees X in its "theirs" plane
np.float32(1.0)

With RLlib (``pip install 'agentrl-gym[rllib]'``): :func:`make_rllib_env` gives the RLlib
``PettingZooEnv``, :func:`register_rllib_envs` registers ``agentrl_<game>`` names with
``ray.tune.registry.register_env``, and :func:`tiny_ppo_config` is a small PPO config (new API
stack, one policy shared by both seats) that trains on CPU in seconds per iteration; see
``examples/rllib_tictactoe.py``. Parallel envs (``debate_v0``) and the free-text cooperative game
(``cooperative_v0``) have no fixed move list and are not offered.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo.utils.wrappers import BaseWrapper

__all__ = [
    "RLLIB_GAMES",
    "NumericGameWrapper",
    "episode_return_mean",
    "game_moves",
    "hashed_text_features",
    "make_numeric_env",
    "make_rllib_env",
    "register_rllib_envs",
    "tiny_ppo_config",
]

#: The multi-agent envs :func:`make_rllib_env` supports (turn-based, with a fixed move list).
RLLIB_GAMES: tuple[str, ...] = ("tictactoe_v0", "connect_four_v0", "nim_v0", "kuhn_poker_v0", "negotiation_v0")

#: Width of the generic hashed-text encoding.
HASH_DIM = 256

_KUHN_MOVES = ("check", "bet", "call", "fold")
_KUHN_MAX_HISTORY = 3  # check-bet-call/fold is the longest betting sequence

Features = Callable[[Any, str], np.ndarray]


def hashed_text_features(text: str, dim: int = HASH_DIM) -> np.ndarray:
    """A bag of character trigrams hashed into ``dim`` buckets, L2-normalised (float32, in [0, 1]).

    Example:
        >>> v = hashed_text_features("You play X.")
        >>> v.shape, round(float(np.linalg.norm(v)), 3)
        ((256,), 1.0)
    """
    vector = np.zeros(dim, dtype=np.float32)
    data = f"  {text.lower()}  ".encode()
    for i in range(len(data) - 2):
        vector[zlib.crc32(data[i : i + 3]) % dim] += 1.0
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


# -- per-game move lists and encodings ---------------------------------------------------------------
def _nim_shape(game: Any) -> tuple[int, int]:
    """(number of heaps, largest heap) a Nim game can ever show."""
    if getattr(game, "random_heaps", False):
        return 5, 7  # Nim.reset draws 3-5 heaps of 1-7 objects
    return len(game.start), max(game.start)


def game_moves(game: Any) -> list[str]:
    """The fixed move list (the meaning of each ``Discrete`` action) of a game's rules object.

    Raises:
        ValueError: the game has no fixed move list known here (pass ``moves=`` to the wrapper).

    Example:
        >>> from agentrl.envs.multiagent.nim import Nim
        >>> game_moves(Nim(heaps=(1, 2)))
        ['[1 1]', '[1 2]', '[2 1]', '[2 2]']
    """
    name = getattr(game, "name", "")
    if name == "tictactoe":
        return [f"[{i}]" for i in range(1, 10)]
    if name == "connect_four":
        from agentrl.envs.multiagent.connect_four import COLUMNS

        return [f"[{c}]" for c in range(1, COLUMNS + 1)]
    if name == "nim":
        heaps, largest = _nim_shape(game)
        return [f"[{h} {n}]" for h in range(1, heaps + 1) for n in range(1, largest + 1)]
    if name == "kuhn_poker":
        return [f"[{m}]" for m in _KUHN_MOVES]
    if name == "negotiation":
        items = len(game.counts)
        splits = itertools.product(range(game.max_count + 1), repeat=items)
        return ["[accept]", "[walk]", *(f"[propose {' '.join(map(str, s))}]" for s in splits)]
    raise ValueError(f"no fixed move list for game {name!r}; pass moves=[...] (the text of each action)")


def _tictactoe_features(env: Any, agent: str) -> np.ndarray:
    game = env.unwrapped.game
    mine = game.marks[agent]
    planes = np.zeros((2, 9), dtype=np.float32)
    for i, cell in enumerate(game.board):
        if cell is not None:
            planes[0 if cell == mine else 1, i] = 1.0
    return planes.reshape(-1)


def _connect_four_features(env: Any, agent: str) -> np.ndarray:
    from agentrl.envs.multiagent.connect_four import COLUMNS, ROWS

    game = env.unwrapped.game
    mine = game.marks[agent]
    planes = np.zeros((2, ROWS, COLUMNS), dtype=np.float32)
    for row in range(ROWS):
        for column in range(COLUMNS):
            cell = game.cell(row, column)
            if cell is not None:
                planes[0 if cell == mine else 1, row, column] = 1.0
    return planes.reshape(-1)


def _nim_features(env: Any, agent: str) -> np.ndarray:
    game = env.unwrapped.game
    heaps, largest = _nim_shape(game)
    bits = max(1, int(largest).bit_length())
    sizes = np.zeros(heaps, dtype=np.float32)
    digits = np.zeros((heaps, bits), dtype=np.float32)
    for h, size in enumerate(game.heaps[:heaps]):
        sizes[h] = size / largest
        digits[h] = [(size >> b) & 1 for b in range(bits)]
    return np.concatenate([sizes, digits.reshape(-1)])


def _kuhn_features(env: Any, agent: str) -> np.ndarray:
    game = env.unwrapped.game
    card = np.zeros(3, dtype=np.float32)
    card[int(game.cards[agent])] = 1.0
    history = np.zeros((_KUHN_MAX_HISTORY, len(_KUHN_MOVES)), dtype=np.float32)
    for i, move in enumerate(game.history[:_KUHN_MAX_HISTORY]):
        if move in _KUHN_MOVES:
            history[i, _KUHN_MOVES.index(move)] = 1.0
    return np.concatenate([card, history.reshape(-1)])


def _text_features(env: Any, agent: str) -> np.ndarray:
    return hashed_text_features(str(env.unwrapped.game.observation(agent)))


_FEATURES: dict[str, Features] = {
    "tictactoe": _tictactoe_features,
    "connect_four": _connect_four_features,
    "nim": _nim_features,
    "kuhn_poker": _kuhn_features,
}


class NumericGameWrapper(BaseWrapper):
    """A text AEC game with numeric observations and ``Discrete`` actions (see the module docstring).

    Args:
        env: a PettingZoo AEC env whose ``unwrapped.game`` is a text game's rules object
            (every ``TextGameEnv``).
        moves: the text of each action; default :func:`game_moves` of the game.
        features: ``features(env, agent) -> 1-D float array in [0, 1]`` of a fixed width (called once
            here to measure it, after a reset if the env has not been reset); default the game's
            compact encoding, or the hashed text of the agent's observation for other games.
        action_mask: make observations ``Dict(observations=..., action_mask=...)``.
    """

    def __init__(
        self,
        env: Any,
        *,
        moves: Sequence[str] | None = None,
        features: Features | None = None,
        action_mask: bool = False,
    ) -> None:
        super().__init__(env)
        game = env.unwrapped.game
        self.moves = list(moves) if moves is not None else game_moves(game)
        if not self.moves:
            raise ValueError("moves must not be empty")
        self._move_index = {m: i for i, m in enumerate(self.moves)}
        self.features = features or _FEATURES.get(getattr(game, "name", ""), _text_features)
        self.action_mask = action_mask
        self.metadata = {**env.metadata, "is_parallelizable": False}
        if self.features is _text_features:
            width = HASH_DIM
        else:  # the compact encodings read the state a rules object has before any reset
            if not env.agents:
                env.reset()
            width = int(np.asarray(self.features(env, env.possible_agents[0])).reshape(-1).shape[0])
        box = spaces.Box(0.0, 1.0, shape=(width,), dtype=np.float32)
        if action_mask:
            mask = spaces.Box(0, 1, shape=(len(self.moves),), dtype=np.int8)
            self._observation_space: spaces.Space = spaces.Dict({"observations": box, "action_mask": mask})
        else:
            self._observation_space = box
        self._action_space = spaces.Discrete(len(self.moves))

    def observation_space(self, agent: str) -> spaces.Space:
        """A ``Box`` (or ``Dict`` with the action mask), the same for every agent."""
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Discrete:
        """``Discrete(len(moves))``, the same for every agent."""
        return self._action_space

    def legal_mask(self, agent: str) -> np.ndarray:
        """1 for each action legal for ``agent`` now (int8, as PettingZoo has it); all ones if it is not due."""
        legal = self.env.unwrapped.infos.get(agent, {}).get("legal_moves") or []
        mask = np.zeros(len(self.moves), dtype=np.int8)
        for move in legal:
            index = self._move_index.get(move)
            if index is not None:
                mask[index] = 1
        return mask if mask.any() else np.ones(len(self.moves), dtype=np.int8)

    def observe(self, agent: str) -> Any:
        """The numeric observation of ``agent`` (with its action mask when asked for)."""
        vector = np.asarray(self.features(self.env, agent), dtype=np.float32).reshape(-1)
        if self.action_mask:
            return {"observations": vector, "action_mask": self.legal_mask(agent)}
        return vector

    def move_text(self, action: Any) -> str:
        """The text move of a ``Discrete`` action."""
        index = int(action)
        if not 0 <= index < len(self.moves):
            raise ValueError(f"action {index} is outside Discrete({len(self.moves)})")
        return self.moves[index]

    def step(self, action: Any) -> None:
        """Play action ``action`` (an index into ``moves``); ``None`` for an agent that is done."""
        agent = self.env.agent_selection
        if action is None or self.env.terminations.get(agent) or self.env.truncations.get(agent):
            self.env.step(action)
        else:
            self.env.step(self.move_text(action))


def make_numeric_env(name: str, *, action_mask: bool = False, **env_kwargs: Any) -> NumericGameWrapper:
    """:class:`NumericGameWrapper` around the multi-agent env ``name`` (``env_kwargs`` go to its ``env()``)."""
    from agentrl.envs.multiagent import MULTIAGENT_ENVS, load

    kind = MULTIAGENT_ENVS.get(name, ("aec", ""))[0]
    if name in MULTIAGENT_ENVS and name not in RLLIB_GAMES:
        raise ValueError(
            f"{name} ({kind}) has free-text actions with no fixed move list; "
            f"the numeric wrapper supports {list(RLLIB_GAMES)}"
        )
    return NumericGameWrapper(load(name).env(**env_kwargs), action_mask=action_mask)


def make_rllib_env(name: str, *, action_mask: bool = False, **env_kwargs: Any) -> Any:
    """RLlib's ``PettingZooEnv`` (a ``MultiAgentEnv``) for the game ``name`` (``"tictactoe_v0"``)."""
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv

    return PettingZooEnv(make_numeric_env(name, action_mask=action_mask, **env_kwargs))


def _env_creator(name: str) -> Callable[[dict[str, Any]], Any]:
    def create(config: dict[str, Any]) -> Any:
        kwargs = dict(config or {})
        action_mask = bool(kwargs.pop("action_mask", False))
        return make_rllib_env(name, action_mask=action_mask, **kwargs)

    return create


def register_rllib_envs(names: Sequence[str] | None = None) -> list[str]:
    """Register ``agentrl_<game>`` (``agentrl_tictactoe_v0``) with ``ray.tune.registry.register_env``.

    The env config is passed through: ``{"action_mask": True, "max_turns": 20}``. Returns the names.
    """
    from ray.tune.registry import register_env

    registered = []
    for name in names if names is not None else RLLIB_GAMES:
        if name not in RLLIB_GAMES:
            raise ValueError(f"{name} is not one of {list(RLLIB_GAMES)}")
        env_name = f"agentrl_{name}"
        register_env(env_name, _env_creator(name))
        registered.append(env_name)
    return registered


def tiny_ppo_config(
    name: str = "tictactoe_v0",
    *,
    shared_policy: bool = True,
    action_mask: bool = True,
    hidden: Sequence[int] = (32, 32),
    train_batch_size: int = 256,
    minibatch_size: int = 64,
    num_epochs: int = 2,
    seed: int | None = 0,
    env_config: dict[str, Any] | None = None,
) -> Any:
    """A small PPO config (RLlib's new API stack, torch, CPU, sampling in the driver: ``num_env_runners=0``).

    ``shared_policy`` maps both seats to one policy ``"shared"`` (the encoding is seat-relative);
    otherwise each seat learns its own policy named after it. With ``action_mask`` the policy is
    RLlib's ``ActionMaskingTorchRLModule`` (illegal moves are never sampled).
    """
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    (env_name,) = register_rllib_envs([name])
    model_config = {"fcnet_hiddens": list(hidden), "vf_share_layers": False}
    module_class = None
    if action_mask:
        from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule

        module_class = ActionMaskingTorchRLModule
    seats = list(make_numeric_env(name).possible_agents)
    policies = ["shared"] if shared_policy else seats

    def policy_mapping_fn(agent_id: str, episode: Any, **kwargs: Any) -> str:
        return "shared" if shared_policy else agent_id

    specs = {p: RLModuleSpec(module_class=module_class, model_config=model_config) for p in policies}
    config = (
        PPOConfig()
        .environment(env_name, env_config={"action_mask": action_mask, **(env_config or {})})
        .framework("torch")
        .env_runners(num_env_runners=0, num_envs_per_env_runner=1)
        .learners(num_learners=0)
        .multi_agent(policies=set(policies), policy_mapping_fn=policy_mapping_fn)
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
        .training(
            train_batch_size_per_learner=train_batch_size,
            minibatch_size=minibatch_size,
            num_epochs=num_epochs,
            lr=3e-4,
        )
        .debugging(seed=seed)
    )
    return config


def episode_return_mean(result: dict[str, Any]) -> dict[str, float]:
    """Mean episode returns from an RLlib training result: ``{"all": ..., "<agent or module>": ...}``.

    RLlib's new API stack reports them under ``result["env_runners"]``; keys missing from
    ``result`` (no episode finished yet) are left out.
    """
    runners = result.get("env_runners", {})
    out: dict[str, float] = {}
    if "episode_return_mean" in runners:
        out["all"] = float(runners["episode_return_mean"])
    for key in ("agent_episode_returns_mean", "module_episode_returns_mean"):
        for who, value in (runners.get(key) or {}).items():
            out[str(who)] = float(value)
    return out
