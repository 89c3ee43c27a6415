"""``AgentEnv``: the episode contract (:class:`~agentrl.core.episode.EpisodeEnv`) in its text form.

A text domain is a :class:`~agentrl.core.task.TaskSource`, an :class:`~agentrl.core.actions.ActionSet`,
a :class:`~agentrl.core.verify.Verifier` and a :class:`~agentrl.core.sandbox.Sandbox` plugged into
:class:`AgentEnv`. One step:

1. ``parsed = action_set.parse(action)``; a bad format gives an ``"[error] ..."`` observation and
   ``info["action_error"]``; the episode goes on.
2. A final answer is scored by the verifier: ``reward = score.value``, ``terminated = True``.
3. Anything else runs in the sandbox (isolated, with a deadline, output capped) ...
4. ... and the result is rendered as the next observation: errors are observations, never exceptions.
5. When the turn budget is spent, ``truncated = True``.

The guards, the turn counter and budget, the info keys and the oracle convention are the
contract's (:mod:`agentrl.core.episode`); ``AgentEnv`` supplies its hooks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym

from agentrl.core.actions import Action, ActionSet, ParseError
from agentrl.core.dataset import finite_task_ids
from agentrl.core.episode import INFO_KEYS, EpisodeEnv, Turn
from agentrl.core.errors import InvalidActionType, ResetNeeded, UnknownTask
from agentrl.core.sandbox import ExecutionRequest, ExecutionResult, Sandbox
from agentrl.core.spaces import UnicodeText
from agentrl.core.task import Task, TaskSource
from agentrl.core.text import truncate_middle
from agentrl.core.verify import Score, Verifier

__all__ = ["AgentEnv", "INFO_KEYS", "render_execution_result"]

_RESET_OPTIONS = ("task_id", "task_index")


def render_execution_result(action: Action, result: ExecutionResult) -> str:
    r"""Default rendering of a sandbox result as the next observation.

    >>> render_execution_result(Action("code", "print(1)"), ExecutionResult(ok=True, output="1\\n"))
    '1\\n'
    >>> render_execution_result(Action("code", "1/0"), ExecutionResult(ok=False, output="", error="ZeroDivisionError"))
    '[tool error] ZeroDivisionError'
    """
    if result.ok:
        return result.output if result.output else "[no output]"
    prefix = result.output + ("\n" if result.output and not result.output.endswith("\n") else "")
    return f"{prefix}[tool error] {result.error}"


class AgentEnv(EpisodeEnv[str, str]):
    """A multi-turn text environment for LLM agents: the episode contract with ActionSet + Verifier + Sandbox.

    Observations and actions are ``str`` (:class:`~agentrl.core.spaces.UnicodeText`). Domains
    usually subclass only to set their parts and document their arguments; the text hooks below
    (:meth:`start_episode`, :meth:`initial_observation`, :meth:`execute_action`,
    :meth:`end_of_episode`, :meth:`episode_state`, :meth:`final_observation`) are theirs to override.

    Args:
        task_source: where tasks come from.
        action_set: how the agent's text maps to actions.
        verifier: scores final answers.
        sandbox_factory: builds the sandbox for non-final actions (called once, at the first reset);
            ``None`` for envs without tools.
        max_turns: the turn budget; the step that spends it is truncated.
        max_observation_chars: observations longer than this are cut in the middle, with a marker.
        max_action_chars: longer actions are refused with an error observation.
        end_on_void_turn: end the episode (terminated, reward 0) on a turn with no usable action.
        render_mode: ``"ansi"`` (``render()`` returns the transcript) or ``"human"`` (prints it).
        system_prompt: the role and rules for an LLM; the action set's instructions are appended.
        render_result: turns a sandbox result into an observation.

    Info keys on every ``reset``/``step`` (see :data:`INFO_KEYS`): ``task_id``, ``turn`` (turns taken),
    ``turns_left``, ``action_error`` (why the action did not parse, else ``None``), ``tool_error``
    (why the tool failed, else ``None``), ``void_turn``, ``done_reason`` (``"answered"``,
    ``"max_turns"``, ``"void_turn"``, a domain's own reason from :meth:`end_of_episode`, or ``None``),
    ``reward_components``.

    The oracle: :meth:`oracle_action` replays the task's ``oracle_actions`` turn by turn.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "human"], "render_fps": 1, "stop_sequences": ()}

    def __init__(
        self,
        *,
        task_source: TaskSource,
        action_set: ActionSet,
        verifier: Verifier,
        sandbox_factory: Callable[[], Sandbox] | None = None,
        max_turns: int = 10,
        max_observation_chars: int = 16_000,
        max_action_chars: int = 65_536,
        end_on_void_turn: bool = False,
        render_mode: str | None = None,
        system_prompt: str = "",
        render_result: Callable[[Action, ExecutionResult], str] = render_execution_result,
    ) -> None:
        super().__init__(max_turns=max_turns)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        self.task_source = task_source
        self.action_set = action_set
        self.verifier = verifier
        self.max_observation_chars = max_observation_chars
        self.max_action_chars = max_action_chars
        self.end_on_void_turn = end_on_void_turn
        self.render_mode = render_mode
        self._system_prompt = system_prompt
        self._render_result = render_result
        self._sandbox_factory = sandbox_factory
        self._sandbox: Sandbox | None = None
        self._sandbox_dirty = False
        self.observation_space = UnicodeText(max_observation_chars)
        self.action_space = UnicodeText(max_action_chars)
        self._task: Task | None = None
        self._transcript: list[tuple[str, str]] = []

    # -- read-only views -------------------------------------------------------------------
    @property
    def system_prompt(self) -> str:
        """Everything an LLM needs before the first observation: role, rules, action format."""
        parts = [self._system_prompt.strip(), self.action_set.describe().strip()]
        return "\n\n".join(p for p in parts if p)

    @property
    def task(self) -> Task:
        """The current task (privileged: oracle agents and tests read it, policies should not)."""
        if self._task is None:
            raise ResetNeeded("no task yet: call env.reset() first")
        return self._task

    @property
    def sandbox(self) -> Sandbox | None:
        """The sandbox, once the first reset has created it."""
        return self._sandbox

    @property
    def transcript(self) -> list[tuple[str, str]]:
        """``(role, text)`` pairs of this episode: ``("env", obs)`` and ``("agent", action)``."""
        return list(self._transcript)

    def render(self) -> str | None:  # type: ignore[override]  # gymnasium types the frame as an unbound TypeVar
        """``"ansi"``: return the episode transcript; ``"human"``: print its last exchange."""
        if self.render_mode is None:
            gym.logger.warn('render() called without a render_mode; pass render_mode="ansi" to gym.make')
            return None
        text = "\n\n".join(f"[{role}]\n{body}" for role, body in self._transcript)
        if self.render_mode == "human":
            print("\n\n".join(f"[{role}]\n{body}" for role, body in self._transcript[-2:]))
            return None
        return text

    # -- the contract's hooks ----------------------------------------------------------------
    def begin_episode(self, options: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """Pick the task (``{"task_id": str}`` or ``{"task_index": int}``, else ``np_random``), clean the sandbox."""
        self._task = self._choose_task(options)
        self._prepare_sandbox(self._task)
        self.start_episode(self._task)
        observation = self._cap(self.initial_observation(self._task))
        self._transcript = [("env", observation)]
        return observation, {}

    def check_action(self, action: Any) -> None:
        """The action must be a ``str`` (the agent's message)."""
        if not isinstance(action, str):
            raise InvalidActionType(
                f"expected the action to be a str (the agent's message), got {type(action).__name__}; "
                "convert it with str(...) or check what your agent returns"
            )

    def act(self, turn: Turn[str]) -> None:
        """Parse; a final answer ends the episode (scored at the end), anything else runs in the sandbox."""
        parsed = self._parse(turn.action)
        turn.parsed = None if isinstance(parsed, ParseError) else parsed
        if isinstance(parsed, ParseError):
            turn.action_error, turn.void_turn = parsed.message, parsed.void
            turn.observation = f"[error] {parsed.message}"
        elif parsed.kind in self.action_set.final_kinds:
            turn.terminated, turn.done_reason, turn.answer = True, "answered", parsed.content
        else:
            turn.observation, turn.tool_error = self.execute_action(parsed)
            ending = self.end_of_episode()
            if ending is not None:  # the env itself ended the episode (a simulated patient left)
                turn.terminated, turn.done_reason = True, ending
        if not turn.terminated and turn.void_turn and self.end_on_void_turn:
            turn.terminated, turn.done_reason = True, "void_turn"

    def score_at_end(self, turn: Turn[str]) -> Score | None:
        """The verifier scores a final answer or an episode the env ended itself; not a budget or void end."""
        if turn.done_reason == "answered":
            score = self.score_answer(turn.answer, turn)
            turn.observation = self.final_observation(score)
            return score
        if turn.done_reason in (self.budget_done_reason, "void_turn") or not turn.terminated:
            return None
        return self.score_answer("", turn)  # the env ended it (end_of_episode): score what stands

    def finish_turn(self, turn: Turn[str]) -> None:
        """Cap the observation, extend the transcript, print in ``"human"`` mode."""
        turn.observation = self._cap(turn.observation or "")
        self._transcript += [("agent", turn.action), ("env", turn.observation)]
        if self.render_mode == "human":
            self.render()

    def oracle_plan(self) -> tuple[str, ...]:
        """The current task's privileged ``oracle_actions``."""
        return tuple(self.task.oracle_actions)

    def current_task_id(self) -> str | None:
        """The current task's id."""
        return self._task.id if self._task else None

    def task_ids(self) -> list[str]:
        """Every task id of a finite task source, in its order; ``reset(options={"task_id": id})`` starts one.

        Raises:
            NoTaskDataset: the task source is a procedural generator (no finite list to sweep).
        """
        return finite_task_ids(self.task_source, hint="give the env a dataset file to sweep")

    def release(self) -> None:
        """Close the sandbox."""
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None

    def score_answer(self, answer: str, turn: Turn[str] | None = None) -> Score:
        """The verifier's score of ``answer`` on the current task, given the episode state (with ``turn``)."""
        return self.verifier(self.task, answer, self.episode_state(turn))

    # -- text hooks a domain may override ----------------------------------------------------
    def reset_sandbox(self, sandbox: Sandbox, task: Task, *, used: bool) -> None:
        """Give the new episode a clean sandbox; ``used``: the last episode ran something in it.

        The default resets a used sandbox; a domain whose sandbox holds per-task state (a database)
        overrides this to reset it straight to the new task's state in one step.
        """
        if used:
            sandbox.reset()

    def start_episode(self, task: Task) -> None:
        """Prepare per-task state after the sandbox is clean (e.g. load the task's database)."""

    def initial_observation(self, task: Task) -> str:
        """The first observation: the task and the instructions for the action format."""
        return f"{task.prompt}\n\n{self.action_set.describe()}"

    def final_observation(self, score: Score) -> str:
        """The observation after the final answer."""
        verdict = "correct" if score.success else "not correct"
        return f"[episode over] your final answer is {verdict} (reward {score.value:g})."

    def execute_action(self, action: Action) -> tuple[str, str | None]:
        """Run a non-final action in the sandbox; return ``(observation, tool_error)``."""
        if self._sandbox is None:
            return f"[error] this env has no tools; give your final answer ({action.kind!r} is not available)", None
        self._sandbox_dirty = True
        result = self._sandbox.execute(ExecutionRequest(action.content))
        return self._render_result(action, result), (None if result.ok else (result.error or "failed"))

    def end_of_episode(self) -> str | None:
        """After a non-final action: the ``done_reason`` if the env ends the episode itself, else ``None``.

        The episode then terminates and is scored as it stands (the verifier sees the answer ``""``;
        e.g. a simulated patient whose patience ran out leaves).
        """
        return None

    def episode_state(self, turn: Turn[str] | None = None) -> Mapping[str, Any]:
        """What the verifier may look at besides the answer; ``turn``: the turn being scored (not in the transcript)."""
        return {"turn": self._turn, "transcript": self.transcript}

    # -- internals -------------------------------------------------------------------------
    def _choose_task(self, options: Mapping[str, Any]) -> Task:
        unknown = sorted(set(options) - set(_RESET_OPTIONS))
        if unknown:
            raise ValueError(f"unknown reset option(s) {unknown}; valid options: {list(_RESET_OPTIONS)}")
        if "task_id" in options and "task_index" in options:
            raise ValueError("pass either options['task_id'] or options['task_index'], not both")
        if "task_id" in options:
            return self.task_source.get(str(options["task_id"]))
        if "task_index" in options:
            if not hasattr(self.task_source, "__getitem__"):
                raise UnknownTask(
                    options["task_index"],
                    hint=f"{type(self.task_source).__name__} is not indexable; use options={{'task_id': ...}}",
                )
            return self.task_source[options["task_index"]]  # type: ignore[index]
        return self.task_source.sample(self.np_random)

    def _prepare_sandbox(self, task: Task) -> None:
        if self._sandbox_factory is None:
            return
        if self._sandbox is None:
            self._sandbox = self._sandbox_factory()
            self.reset_sandbox(self._sandbox, task, used=False)
        else:
            self.reset_sandbox(self._sandbox, task, used=self._sandbox_dirty)
        self._sandbox_dirty = False

    def _parse(self, action: str) -> Action | ParseError:
        if len(action) > self.max_action_chars:
            return ParseError(
                f"your message is {len(action)} characters long; the limit is {self.max_action_chars}. "
                "Write a shorter turn.",
                raw="",
            )
        return self.action_set.parse(action)

    def _cap(self, observation: str) -> str:
        return truncate_middle(observation, self.max_observation_chars)
