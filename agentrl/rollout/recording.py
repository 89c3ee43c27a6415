"""What a recording endpoint keeps of an agent harness's model calls, and the trajectories made from it.

A harness (any agent written against the OpenAI API) plays an episode through an OpenAI client pointed at
``serve_model(backend, recorder=CallRecorder())``. Each call is recorded with the exact prompt token ids the chat
template produced, the sampled ids and their logprobs (:class:`CallRecord`), under the episode's tag.
:func:`trajectory_from_calls` then turns one episode's calls into a :class:`~agentrl.rollout.trajectory.Trajectory`
with nothing re-tokenised: when each call's prompt extends the previous call's prompt and completion token for
token, the calls are one sequence (the env's text in between is masked out); where the harness rewrote its
history (a summary, a dropped turn, or a chat template that renders a past reply with other tokens than were
sampled), the episode is split into windows, one per break, as the rollout engine does for screenshots.

>>> from agentrl.llm.base import Generation
>>> recorder = CallRecorder()
>>> recorder.open("ep-1")
>>> recorder.record("ep-1", None, Generation("hi", "stop", [1, 2], [7, 8], [-0.5, -0.25]))
>>> recorder.record("ep-1", None, Generation("ok", "stop", [1, 2, 7, 8, 3], [9], [-0.1]))
>>> calls = recorder.close("ep-1")
>>> t = trajectory_from_calls(calls, [(0, 0.0), (1, 1.0)])
>>> t.token_ids, t.loss_mask, t.total_reward
([1, 2, 7, 8, 3, 9], [0, 0, 1, 1, 0, 1], 1.0)
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentrl.rollout.trajectory import RolloutRequest, Trajectory, TurnRecord

__all__ = ["CallRecord", "CallRecorder", "trajectory_from_calls"]


@dataclass
class CallRecord:
    """One model call of a harness, as the endpoint served it.

    Attributes:
        index: the call's position in its episode (0, 1, ...).
        prompt_ids: the exact prompt tokens (the chat template's rendering of the request's messages).
        token_ids: the sampled tokens.
        logprobs: the sampler's logprob of each sampled token.
        text: the reply's text as the harness received it.
        finish_reason: ``"stop"`` or ``"length"``.
        messages: the request's chat messages (``None`` for a token-in ``/v1/completions`` call).
    """

    index: int
    prompt_ids: list[int]
    token_ids: list[int]
    logprobs: list[float]
    text: str
    finish_reason: str
    messages: list[dict[str, Any]] | None = field(default=None, repr=False)


class CallRecorder:
    """The calls of open episodes, by tag; thread-safe (the endpoint records from its own thread).

    An episode is :meth:`open` before its harness runs and :meth:`close` after, which returns its calls; the
    endpoint refuses calls for a tag that is not open.

    Args:
        temperature: when set, every recorded call samples at this temperature (and ``top_p``), whatever the
            harness asked: a trainer's loss assumes the sampling distribution it was given.
        top_p: the nucleus mass that goes with ``temperature``.
        max_tokens: when set, the most tokens any call may sample (a smaller request is kept).
    """

    def __init__(self, *, temperature: float | None = None, top_p: float = 1.0, max_tokens: int | None = None) -> None:
        self._lock = threading.Lock()
        self._calls: dict[str, list[CallRecord]] = {}
        self._failures: dict[str, str] = {}
        self.temperature = temperature
        self.top_p = top_p
        self.max_tokens = max_tokens

    def sampling(self, config: Any) -> Any:
        """A call's :class:`~agentrl.llm.base.GenerationConfig` with the recorder's settings in force."""
        changes: dict[str, Any] = {}
        if self.temperature is not None:
            changes.update(temperature=self.temperature, top_p=self.top_p)
        if self.max_tokens is not None and config.max_tokens > self.max_tokens:
            changes["max_tokens"] = self.max_tokens
        return dataclasses.replace(config, **changes) if changes else config

    def open(self, tag: str) -> None:
        """Start recording the episode ``tag``."""
        with self._lock:
            if tag in self._calls:
                raise ValueError(f"episode {tag!r} is already open")
            self._calls[tag] = []

    def knows(self, tag: str) -> bool:
        """Whether ``tag`` is an open episode."""
        with self._lock:
            return tag in self._calls

    def record(self, tag: str, messages: Sequence[Any] | None, generation: Any) -> None:
        """Keep one call (a :class:`~agentrl.llm.base.Generation`) of the episode ``tag``."""
        if len(generation.token_ids) != len(generation.logprobs):
            raise ValueError(f"{len(generation.token_ids)} sampled ids but {len(generation.logprobs)} logprobs")
        with self._lock:
            calls = self._calls.get(tag)
            if calls is None:
                raise KeyError(f"episode {tag!r} is not open")
            calls.append(
                CallRecord(
                    index=len(calls),
                    prompt_ids=[int(i) for i in generation.prompt_token_ids],
                    token_ids=[int(i) for i in generation.token_ids],
                    logprobs=[float(x) for x in generation.logprobs],
                    text=str(generation.text),
                    finish_reason=str(generation.finish_reason),
                    messages=None if messages is None else [dict(m) for m in messages],
                )
            )

    def fail(self, tag: str, reason: str) -> None:
        """Mark the open episode ``tag`` failed (a malformed tool call, say), whatever its harness does next."""
        with self._lock:
            if tag in self._calls:
                self._failures.setdefault(tag, reason)

    def failure(self, tag: str) -> str | None:
        """Why the episode ``tag`` failed at the endpoint (``None`` when it did not)."""
        with self._lock:
            return self._failures.get(tag)

    def count(self, tag: str) -> int:
        """How many calls the open episode ``tag`` has made so far."""
        with self._lock:
            return len(self._calls.get(tag, ()))

    def close(self, tag: str) -> list[CallRecord]:
        """Stop recording ``tag``; return its calls in order (later calls with that tag are refused).

        Read :meth:`failure` first: closing forgets it.
        """
        with self._lock:
            self._failures.pop(tag, None)
            return self._calls.pop(tag, [])


def trajectory_from_calls(
    calls: Sequence[CallRecord],
    rewards: Sequence[tuple[int, float]],
    *,
    request: RolloutRequest | None = None,
    terminated: bool = True,
    truncated: bool = False,
    policy_version: int = 0,
) -> Trajectory:
    """One episode's calls as a trajectory (see the module docstring).

    Args:
        calls: the episode's calls, in order (at least one).
        rewards: the env's rewards as ``(calls made before that step, reward)`` pairs: each reward goes to the
            turn of the last call made before its step (the first turn when no call came before).
        request: the request the episode answered.
        terminated: whether the env ended the episode (else it was left unfinished: ``truncated``).
        truncated: whether the env truncated it.
        policy_version: the policy version that served the calls.

    Raises:
        ValueError: no calls, or a call whose ids and logprobs differ in length.
    """
    if not calls:
        raise ValueError("an episode without model calls has no tokens to train on")
    turn_rewards = [0.0] * len(calls)
    for made, reward in rewards:
        turn_rewards[max(0, min(int(made), len(calls)) - 1)] += float(reward)
    pieces: list[Trajectory] = []
    current: Trajectory | None = None
    for number, call in enumerate(calls):
        if len(call.token_ids) != len(call.logprobs):
            raise ValueError(f"call {number}: {len(call.token_ids)} sampled ids but {len(call.logprobs)} logprobs")
        extends = current is not None and call.prompt_ids[: len(current.token_ids)] == current.token_ids
        if current is not None and extends:
            start, end = current.append_env(call.prompt_ids[len(current.token_ids) :])
            last = current.turns[-1]
            last.observation_span = (start, end)
        else:
            if current is not None:
                pieces.append(current)
            current = Trajectory(request=request or RolloutRequest(), policy_version=policy_version)
            current.append_env(call.prompt_ids)
            current.prompt_length = len(call.prompt_ids)
        span = current.append_policy(call.token_ids, call.logprobs)
        last_call = number == len(calls) - 1
        current.turns.append(
            TurnRecord(
                completion_span=span,
                observation_span=(span[1], span[1]),
                action=call.text,
                finish_reason=call.finish_reason,
                reward=turn_rewards[number],
                terminated=bool(terminated) and last_call,
                truncated=bool(truncated or not terminated) and last_call,
                void_turn=False,
                info={"call": number},
                policy_version=policy_version,
            )
        )
        if call.messages is not None:
            history = [{"role": str(m.get("role")), "content": str(m.get("content") or "")} for m in call.messages]
            current.messages = [*history, {"role": "assistant", "content": call.text}]  # type: ignore[list-item]
    assert current is not None
    current.windows = pieces
    return current
