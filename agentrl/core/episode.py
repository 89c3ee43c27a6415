"""``EpisodeEnv``: the one episode contract every single-agent AgentRL env runs on.

A domain supplies its parts through documented hooks; it never writes its own step loop. The base
owns what every env must do the same way:

* the guards: ``step`` before ``reset`` or after the episode ended raises
  :class:`~agentrl.core.errors.ResetNeeded`; ``reset`` or ``step`` after ``close`` raises its subclass
  :class:`~agentrl.core.errors.EnvClosed` (also Gymnasium's ``ClosedEnvironmentError``);
* the turn counter and the turn budget (``max_turns``): the step that spends it is truncated with
  ``done_reason = budget_done_reason`` (``"max_turns"``; the desktop and the games keep their
  ``"max_steps"``);
* the info vocabulary (:data:`INFO_KEYS`) on every ``reset`` and ``step``: ``task_id``, ``turn``,
  ``turns_left``, ``action_error``, ``tool_error``, ``void_turn``, ``done_reason``,
  ``reward_components``; a domain adds its own keys (pixels, desktop) after them;
* the oracle convention: :meth:`EpisodeEnv.oracle_action` is the privileged expert's next action
  for the current state; a domain whose expert is a fixed plan gives :meth:`EpisodeEnv.oracle_plan`
  instead, and the base replays it turn by turn;
* a per-step reward hook (:meth:`EpisodeEnv.step_reward`, dense rewards) and a score-at-end hook
  (:meth:`EpisodeEnv.score_at_end`, the verifier's score once the episode is over).

One ``step(action)``:

1. guards; ``check_action(action)`` (a wrong *type* is API misuse and raises);
2. ``turn += 1``; ``act(record)``: the domain runs the action and fills the :class:`Turn` record
   (observation, errors, whether and why the episode ended);
3. the turn budget: not ended and ``turn >= max_turns`` -> truncated;
4. ``reward = step_reward(record)``, plus ``score_at_end(record).value`` when the episode ended;
5. ``finish_turn(record)`` (last look: cap the observation, keep a transcript, add info keys);
6. ``(observation, reward, terminated, truncated, info)``.

``AgentEnv`` (:mod:`agentrl.core.env`) is this contract with an ActionSet, a Verifier and a
Sandbox: the text form. The desktop (OSWorld), the browser games and the single-seat views of the
multi-agent games are the same contract with their own parts.

>>> class Count(EpisodeEnv[int, int]):
...     '''Say the next number; 3 ends the episode with a score of 1.'''
...     def __init__(self):
...         super().__init__(max_turns=5)
...         import gymnasium as gym
...         self.observation_space = gym.spaces.Discrete(10)
...         self.action_space = gym.spaces.Discrete(10)
...     def begin_episode(self, options):
...         return 0, {}
...     def act(self, turn):
...         turn.observation = int(turn.action)
...         if turn.action == 3:
...             turn.terminated, turn.done_reason = True, "answered"
...     def score_at_end(self, turn):
...         return Score(1.0) if turn.done_reason == "answered" else None
...     def oracle_plan(self):
...         return (1, 2, 3)
>>> env = Count()
>>> observation, info = env.reset(seed=0)
>>> info["turn"], info["turns_left"]
(0, 5)
>>> while True:
...     observation, reward, terminated, truncated, info = env.step(env.oracle_action())
...     if terminated or truncated:
...         break
>>> reward, info["turn"], info["done_reason"]
(1.0, 3, 'answered')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

import gymnasium as gym

from agentrl.core.errors import EnvClosed, ResetNeeded
from agentrl.core.verify import Score

__all__ = ["EPISODE_KINDS", "INFO_KEYS", "EpisodeEnv", "Turn", "env_failure"]

ObsT = TypeVar("ObsT")
ActT = TypeVar("ActT")

#: the keys of ``info`` on every ``reset`` and ``step`` of every single-agent env
INFO_KEYS = (
    "task_id",
    "turn",
    "turns_left",
    "action_error",
    "tool_error",
    "void_turn",
    "done_reason",
    "reward_components",
)

def env_failure(info: Mapping[str, Any]) -> str | None:
    """Why the env's own machinery ended the episode (``done_reason == "env_error"``), or ``None``.

    A crashed page or a dead display says nothing about the agent: the bench re-runs such an episode and
    the rollout engine does not train on it. Both read it here, so they report it the same way.

    >>> env_failure({"done_reason": "env_error", "env_error": "the page's renderer crashed"})
    "the env failed mid-episode (done_reason env_error): the page's renderer crashed"
    >>> env_failure({"done_reason": "answered"}) is None
    True
    """
    if info.get("done_reason") != "env_error":
        return None
    detail = info.get("env_error") or info.get("action_error") or "no detail given"
    return f"the env failed mid-episode (done_reason env_error): {detail}"


#: what :attr:`EpisodeEnv.episode_kind` may say (``check_domain`` adds the checks of each kind)
EPISODE_KINDS = ("text", "pixels", "desktop", "seat")


@dataclass
class Turn(Generic[ObsT]):
    """One step's record: the domain's :meth:`EpisodeEnv.act` fills it, the base finishes it.

    Attributes:
        action: the action as the agent gave it.
        observation: the next observation (set by ``act``; ``score_at_end``/``finish_turn`` may replace it).
        terminated: the episode ended by the task's own rules (an answer, a win, a crash).
        truncated: the domain cut the episode short itself (the base adds turn-budget truncation).
        done_reason: why the episode ended (``None`` while it goes on).
        action_error: why the action could not be used (did not parse), else ``None``.
        tool_error: why running the action failed (the tool, the page, the desktop), else ``None``.
        void_turn: the turn had no usable action.
        reward_components: named parts of the reward (the score's breakdown is added at the end).
        info: the domain's own info keys for this step.
        parsed: the domain's parsed action, for its hooks (``None`` when it did not parse).
        answer: the final answer the verifier scores, if this turn gave one.
        score: the score-at-end, once the base asked for it.
        reward: the step's reward, once the base computed it.
    """

    action: Any
    observation: ObsT | None = None
    terminated: bool = False
    truncated: bool = False
    done_reason: str | None = None
    action_error: str | None = None
    tool_error: str | None = None
    void_turn: bool = False
    reward_components: dict[str, float] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    parsed: Any = None
    answer: Any = None
    score: Score | None = None
    reward: float = 0.0

    @property
    def ended(self) -> bool:
        """Whether the episode is over after this turn."""
        return self.terminated or self.truncated


#: what ``remote=URL`` builds (``(env class, url, keyword arguments) -> env``): installed by
#: :mod:`agentrl.serving.remote_env` when it is imported (``import agentrl`` imports it), since that module builds
#: on this one and this one must not import it back.
_remote_maker: Callable[[type, str, dict[str, Any]], Any] | None = None


def install_remote_maker(maker: Callable[[type, str, dict[str, Any]], Any]) -> None:
    """Set what ``EpisodeEnv(remote=URL, ...)`` returns (called by :mod:`agentrl.serving.remote_env`)."""
    global _remote_maker
    _remote_maker = maker


class EpisodeEnv(gym.Env[ObsT, ActT], Generic[ObsT, ActT]):
    """The episode contract (see the module docstring): guards, turns, budget, info, oracle, rewards.

    Subclasses call ``super().__init__(max_turns=...)``, set ``observation_space`` and
    ``action_space``, and implement :meth:`begin_episode` and :meth:`act`; the other hooks have
    defaults. They do not override ``reset`` or ``step``.

    Class attributes:
        episode_kind: ``"text"``, ``"pixels"``, ``"desktop"`` or ``"seat"`` (a seat of a multi-agent
            game): which extra checks :func:`agentrl.testing.check_domain` runs.
        budget_done_reason: the ``done_reason`` of the step that spends the turn budget.
        deprecated_info: info keys kept for one release, each with its deprecation note (an env
            that renames a key keeps the old one here, as Gymnasium does, until its next version).

    Attributes:
        reset_seed: the seed of the latest ``reset`` (``None`` for an unseeded one).
    """

    episode_kind: ClassVar[str] = "text"
    budget_done_reason: ClassVar[str] = "max_turns"
    deprecated_info: Mapping[str, str] = {}

    def __new__(cls, *args: Any, remote: str | None = None, **kwargs: Any) -> Any:
        """``remote=URL`` (``gym.make(ID, remote=URL)``): the env served there (``agentrl serve-env``) instead.

        The result is a :class:`~agentrl.serving.remote_env.RemoteEnv`, checked to serve this class with the same
        arguments; without ``remote`` this is the plain constructor.
        """
        if remote is None:
            return super().__new__(cls)
        if _remote_maker is None:  # import agentrl imports agentrl.serving.remote_env, which installs it
            raise RuntimeError("remote= needs agentrl.serving.remote_env: import agentrl")
        if args:  # a factory passed some arguments by position (make_game_env): name them, to compare with the server's
            import inspect

            bound = inspect.signature(cls.__init__).bind_partial(None, *args)
            kwargs = {**{k: v for k, v in list(bound.arguments.items())[1:]}, **kwargs}
        return _remote_maker(cls, remote, kwargs)

    def __init__(self, *, max_turns: int) -> None:
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
            raise ValueError(f"max_turns must be an int >= 1, got {max_turns!r}")
        self.max_turns = max_turns
        self._turn = 0
        self._active = False
        self._closed = False
        self.reset_seed: int | None = None

    # -- read-only views ---------------------------------------------------------------------
    @property
    def turn(self) -> int:
        """Turns taken in this episode."""
        return self._turn

    @property
    def turns_left(self) -> int:
        """Turns left in the budget."""
        return self.max_turns - self._turn

    @property
    def episode_active(self) -> bool:
        """Whether ``step`` may be called (reset done, episode not over, env not closed)."""
        return self._active

    # -- the gymnasium API (the only step loop) -------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[ObsT, dict[str, Any]]:
        """Start an episode: the domain's :meth:`begin_episode`, then the contract's info keys."""
        super().reset(seed=seed)
        if self._closed:
            raise EnvClosed("this env was closed; make a new one with gym.make(...)")
        self._active = False
        self._turn = 0
        self.reset_seed = seed
        observation, extra = self.begin_episode(dict(options or {}))
        self._active = True
        return observation, self._info(None, extra)

    def step(self, action: ActT) -> tuple[ObsT, float, bool, bool, dict[str, Any]]:
        """Take one turn; see the module docstring for the flow."""
        if self._closed:
            raise EnvClosed("this env was closed; make a new one with gym.make(...)")
        if not self._active:
            raise ResetNeeded(
                "step() called before reset() or after the episode ended; call env.reset() to start an episode"
            )
        self.check_action(action)
        self._turn += 1
        record: Turn[ObsT] = Turn(action)
        self.act(record)
        if not record.ended and self._turn >= self.max_turns:
            record.truncated, record.done_reason = True, self.budget_done_reason
        reward = float(self.step_reward(record))
        if record.ended:
            score = self.score_at_end(record)
            if score is not None:
                record.score = score
                reward += float(score.value)
                record.reward_components = {**record.reward_components, **dict(score.breakdown)}
        record.reward = reward
        self._active = not record.ended
        self.finish_turn(record)
        return record.observation, reward, record.terminated, record.truncated, self._info(record, record.info)  # type: ignore[return-value]

    def close(self) -> None:
        """End the episode and release what the domain holds (:meth:`release`); safe to call twice."""
        self._active = False
        if self._closed:
            return
        self._closed = True
        self.release()

    # -- the oracle convention ---------------------------------------------------------------------
    def oracle_action(self) -> ActT:
        """The privileged expert's next action for the current state (oracles and tests; not for policies).

        The default replays :meth:`oracle_plan` turn by turn (repeating its last action once it runs
        out); domains whose expert reacts to the state (games) override this instead.
        """
        if self._turn == 0 and not self._active:
            raise ResetNeeded("no episode yet: call env.reset() first")
        plan = self.oracle_plan()
        if plan is None:
            raise NotImplementedError(
                f"{type(self).__name__} has no oracle: implement oracle_plan() or oracle_action()"
            )
        if not plan:
            raise ValueError(f"task {self.current_task_id()!r} has no oracle actions")
        return plan[min(self._turn, len(plan) - 1)]

    def oracle_plan(self) -> Sequence[ActT] | None:
        """The privileged action sequence of the current episode, when the expert is a fixed plan; else ``None``."""
        return None

    # -- hooks a domain implements -----------------------------------------------------------------
    def begin_episode(self, options: Mapping[str, Any]) -> tuple[ObsT, dict[str, Any]]:
        """Start the domain's episode (``np_random`` is seeded); return the first observation and extra info keys."""
        raise NotImplementedError

    def act(self, turn: Turn[ObsT]) -> None:
        """Run ``turn.action`` and fill ``turn``: ``observation``, errors, ``terminated``/``done_reason``..."""
        raise NotImplementedError

    # -- hooks with defaults -------------------------------------------------------------------------
    def check_action(self, action: Any) -> None:
        """Raise :class:`~agentrl.core.errors.InvalidActionType` for an action of the wrong type (misuse)."""

    def step_reward(self, turn: Turn[ObsT]) -> float:
        """The per-step (dense) reward of ``turn``, before any score at the end; default 0."""
        return 0.0

    def score_at_end(self, turn: Turn[ObsT]) -> Score | None:
        """Score the episode once it is over (``turn.ended``); ``None``: nothing to add.

        Its value is added to the step's reward and its breakdown to ``reward_components``; it may
        replace ``turn.observation`` (the verdict).
        """
        return None

    def finish_turn(self, turn: Turn[ObsT]) -> None:
        """The last look at a step (cap the observation, keep a transcript, add ``turn.info`` keys)."""

    def current_task_id(self) -> str | None:
        """The id of the current task (``info["task_id"]``)."""
        return None

    def release(self) -> None:
        """Release the domain's resources (sandbox, page, desktop); called once by :meth:`close`."""

    # -- internals ---------------------------------------------------------------------------------
    def _info(self, turn: Turn[Any] | None, extra: Mapping[str, Any]) -> dict[str, Any]:
        info: dict[str, Any] = {
            "task_id": self.current_task_id(),
            "turn": self._turn,
            "turns_left": self.max_turns - self._turn,
            "action_error": None if turn is None else turn.action_error,
            "tool_error": None if turn is None else turn.tool_error,
            "void_turn": False if turn is None else turn.void_turn,
            "done_reason": None if turn is None else turn.done_reason,
            "reward_components": {} if turn is None else dict(turn.reward_components),
        }
        info.update(extra)
        return info
