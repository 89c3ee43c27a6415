"""The checks every AgentRL domain must pass; our CI runs them on every registered id.

>>> from agentrl.testing import check_domain
>>> check_domain("AgentRL/TIRMath-v0", seeds=(0,), log=print)  # doctest: +ELLIPSIS
AgentRL/TIRMath-v0: check_env passed
...
AgentRL/TIRMath-v0: close() twice passed
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym
from gymnasium.utils.env_checker import check_env

from agentrl.core.env import AgentEnv
from agentrl.core.episode import INFO_KEYS, EpisodeEnv
from agentrl.core.errors import AgentRLError, ResetNeeded
from agentrl.core.spaces import UnicodeText

__all__ = [
    "PORTABLE_SANDBOX_ATTACKS",
    "DomainCheckError",
    "check_domain",
    "check_multiagent_env",
    "check_sandbox_attack",
]

GARBAGE_ANSWER = "zq-garbage-answer-7f3a"


class DomainCheckError(AgentRLError, AssertionError):
    """A domain failed one of :func:`check_domain`'s checks; the message says which and shows the episode."""


def check_domain(
    env_id: str,
    *,
    seeds: Sequence[int] = (0, 1, 2),
    make_kwargs: Mapping[str, Any] | None = None,
    log: Callable[[str], None] | None = None,
) -> None:
    """Run the checks every single-agent env must pass, raising :class:`DomainCheckError` on the first failure.

    One path for every env on the episode contract (:class:`~agentrl.core.episode.EpisodeEnv`),
    with the extras of its ``episode_kind`` (text, pixels, desktop, seat):

    1. the env is an ``EpisodeEnv``; ``gymnasium.utils.env_checker.check_env`` on the unwrapped env.
    2. Determinism: two envs, same seed, same actions -> identical observations, rewards, infos
       (not for the desktop: one real desktop at a time, and its clock shows on screen).
    3. Oracle: ``oracle_action()`` played to the end solves the task, over ``seeds`` (text and
       desktop: full reward; pixels: the game won with every milestone; seat: the game ends by
       its rules with no invalid move); every step's ``info`` carries :data:`INFO_KEYS`.
    4. Wrong actions, per kind: a garbage final answer earns zero and ends the episode, and each
       malformed example gives an ``[error]`` observation and ``info["action_error"]`` (text);
       ``DONE`` at once scores 0 (desktop); bad actions raise or are ``action_error`` (pixels); an
       illegal move is an ``action_error`` and the game goes on (seat).
    5. Budget: filler actions until the episode ends; ``turn`` counts them (unless the env lists
       ``turn`` in ``deprecated_info``: a v0 meaning kept for a release); truncation comes exactly at
       ``max_turns`` with ``done_reason == budget_done_reason`` and ``turns_left == 0``; a further
       ``step`` raises.
    6. ``close()`` twice.

    Args:
        env_id: a registered id, e.g. ``"AgentRL/TIRMath-v0"``.
        seeds: reset seeds for the oracle and wrong-action checks.
        make_kwargs: keyword arguments for ``gym.make``.
        log: called with one line per passed check (for example ``print``).
    """
    kwargs = dict(make_kwargs or {})
    say = log or (lambda line: None)
    env = gym.make(env_id, **kwargs)
    twin: gym.Env[Any, Any] | None = None
    try:
        base = env.unwrapped
        if not isinstance(base, EpisodeEnv):
            raise DomainCheckError(
                f"{env_id}: expected an env on the episode contract (EpisodeEnv), got {type(base).__name__}"
            )
        kind = _KINDS.get(base.episode_kind)
        if kind is None:
            raise DomainCheckError(f"{env_id}: unknown episode_kind {base.episode_kind!r}; one of {list(_KINDS)}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # check_env's advice on text spaces and render modes
            check_env(base, skip_render_check=True, skip_close_check=not kind.twin)
        say(f"{env_id}: check_env passed")

        if kind.twin:
            twin = gym.make(env_id, **kwargs)
            _check_determinism(env, twin, seeds[0], env_id, kind)
            say(f"{env_id}: deterministic under seed {seeds[0]}")
        for seed in seeds:
            _check_oracle(env, seed, env_id, kind)
            kind.check_wrong(env, seed, env_id)
        say(f"{env_id}: oracle and wrong-action checks passed for seeds {list(seeds)}")
        _check_budget(env, seeds[0], env_id, kind)
        say(f"{env_id}: the episode ends by its budget or its rules, then step() raises ResetNeeded")
    finally:
        if twin is not None:
            twin.close()
        env.close()
        env.close()
    say(f"{env_id}: close() twice passed")


class _Kind:
    """The extras of one ``episode_kind``: what 'solved' means, which wrong actions, which filler."""

    twin = True  # a second env for the determinism check

    def prefix(self, base: EpisodeEnv[Any, Any]) -> list[Any]:
        """Actions played before the oracle's in the determinism check."""
        return []

    def solved(self, reward: float, terminated: bool, info: Mapping[str, Any], base: EpisodeEnv[Any, Any]) -> bool:
        """Whether the oracle's last step shows the task solved."""
        return terminated and reward >= 1.0

    def check_wrong(self, env: gym.Env[Any, Any], seed: int, env_id: str) -> None:
        """Wrong actions are refused the kind's way."""

    def filler(self, base: EpisodeEnv[Any, Any]) -> Any:
        """An action that makes no progress (for the budget check), or ``None`` to play the oracle."""
        return None

    def filler_must_error(self) -> bool:
        """Whether every filler step must report ``action_error``."""
        return False

    def may_terminate(self, base: EpisodeEnv[Any, Any], info: Mapping[str, Any]) -> bool:
        """Whether filler steps may end the episode by its rules (a game over)."""
        return False


class _TextKind(_Kind):
    def prefix(self, base: EpisodeEnv[Any, Any]) -> list[Any]:
        return [*_text(base).action_set.malformed_examples()[:1]]

    def check_wrong(self, env: gym.Env[Any, Any], seed: int, env_id: str) -> None:
        _check_garbage(env, seed, env_id)
        _check_malformed(env, seed, env_id)

    def filler(self, base: EpisodeEnv[Any, Any]) -> Any:
        return _text(base).action_set.malformed_examples()[0]

    def filler_must_error(self) -> bool:
        return True

    def may_terminate(self, base: EpisodeEnv[Any, Any], info: Mapping[str, Any]) -> bool:
        return _text(base).end_on_void_turn and bool(info["void_turn"])


class _PixelsKind(_Kind):
    def solved(self, reward: float, terminated: bool, info: Mapping[str, Any], base: EpisodeEnv[Any, Any]) -> bool:
        return terminated and bool(info["won"]) and info["milestones_done"] == info["milestones_total"]

    def check_wrong(self, env: gym.Env[Any, Any], seed: int, env_id: str) -> None:
        base = env.unwrapped
        env.reset(seed=seed)
        if isinstance(base.action_space, gym.spaces.Discrete):
            for bad in (-1, base.action_space.n, 1.5, "up"):
                try:
                    env.step(bad)
                except (AgentRLError, TypeError, ValueError):
                    continue
                raise DomainCheckError(f"{env_id}: step({bad!r}) should raise InvalidActionType")
            return
        for bad in ("", "zq-garbage", "click(-5, -5)", "x" * 5000):
            _, reward, terminated, _, info = env.step(bad)
            if not isinstance(info["action_error"], str) or terminated or reward != 0:
                raise DomainCheckError(f"{env_id}: action {bad[:40]!r} should be an error, got {info}")

    def filler(self, base: EpisodeEnv[Any, Any]) -> Any:
        import numpy as np

        if isinstance(base.action_space, gym.spaces.Discrete):
            return np.int64(base.action_space.sample())
        return "wait()"

    def may_terminate(self, base: EpisodeEnv[Any, Any], info: Mapping[str, Any]) -> bool:
        return True  # a random move may end the game


class _DesktopKind(_Kind):
    twin = False  # one real desktop at a time

    def solved(self, reward: float, terminated: bool, info: Mapping[str, Any], base: EpisodeEnv[Any, Any]) -> bool:
        return terminated and reward == 1.0

    def check_wrong(self, env: gym.Env[Any, Any], seed: int, env_id: str) -> None:
        base: Any = env.unwrapped
        env.reset(seed=seed)
        _, reward, terminated, _, info = env.step(
            "DONE" if isinstance(base.action_space, UnicodeText) else {"action_type": "DONE"}
        )
        if not terminated or (reward != 0.0 and not base.task.evaluator.infeasible):
            raise DomainCheckError(f"{env_id}: DONE at once on task {info['task_id']} scored {reward}")

    def filler(self, base: EpisodeEnv[Any, Any]) -> Any:
        return "```python\nthis is not python(\n```" if isinstance(base.action_space, UnicodeText) else "{not json"

    def filler_must_error(self) -> bool:
        return True


class _SeatKind(_Kind):
    def solved(self, reward: float, terminated: bool, info: Mapping[str, Any], base: EpisodeEnv[Any, Any]) -> bool:
        return terminated and info["invalid_moves"] == 0

    def check_wrong(self, env: gym.Env[Any, Any], seed: int, env_id: str) -> None:
        env.reset(seed=seed)
        _, reward, terminated, truncated, info = env.step(GARBAGE_ANSWER)
        if terminated or truncated or reward != 0.0 or not isinstance(info["action_error"], str):
            raise DomainCheckError(f"{env_id}: an illegal move should be an action_error and the game go on: {info}")


_KINDS: dict[str, _Kind] = {
    "text": _TextKind(),
    "pixels": _PixelsKind(),
    "desktop": _DesktopKind(),
    "seat": _SeatKind(),
}


def _text(base: EpisodeEnv[Any, Any]) -> Any:
    """A text env for the checks: an AgentEnv, or a remote one (``gym.make(ID, remote=URL)``) with its action set."""
    if isinstance(base, AgentEnv):
        return base
    if getattr(base, "action_set", None) is None:
        raise DomainCheckError(
            f"an env of episode_kind 'text' must be an AgentEnv (or a remote one), got {type(base).__name__}"
        )
    return base


def _digest(observation: Any) -> Any:
    """Observations made comparable: arrays by a hash of their bytes."""
    import hashlib

    import numpy as np

    if isinstance(observation, np.ndarray):
        return hashlib.sha256(observation.tobytes()).hexdigest()[:16]
    if isinstance(observation, Mapping):
        return {key: _digest(value) for key, value in observation.items()}
    return observation


def _oracle_episode(env: gym.Env[Any, Any], seed: int, prefix: Sequence[Any], steps: int) -> list[tuple[Any, ...]]:
    """``prefix`` then the oracle's actions, up to ``steps`` steps: digests, rewards, flags, infos."""
    base = env.unwrapped
    assert isinstance(base, EpisodeEnv)
    observation, info = env.reset(seed=seed)
    record: list[tuple[Any, ...]] = [(_digest(observation), _comparable(info))]
    for index in range(steps):
        action = prefix[index] if index < len(prefix) else base.oracle_action()
        observation, reward, terminated, truncated, info = env.step(action)
        record.append((_digest(observation), float(reward), terminated, truncated, _comparable(info)))
        if terminated or truncated:
            break
    return record


def _comparable(info: Mapping[str, Any]) -> dict[str, Any]:
    missing = [key for key in INFO_KEYS if key not in info]
    if missing:
        raise DomainCheckError(f"info is missing the keys {missing}; every step must carry {list(INFO_KEYS)}")
    return dict(info)


def _check_determinism(env: gym.Env[Any, Any], twin: gym.Env[Any, Any], seed: int, env_id: str, kind: _Kind) -> None:
    base = env.unwrapped
    assert isinstance(base, EpisodeEnv)
    env.reset(seed=seed)
    prefix = kind.prefix(base)
    steps = min(base.max_turns, 20 + len(prefix))
    first, second = _oracle_episode(env, seed, prefix, steps), _oracle_episode(twin, seed, prefix, steps)
    if first != second:
        for index, (left, right) in enumerate(zip(first, second, strict=False)):
            if left != right:
                raise DomainCheckError(
                    f"{env_id}: not deterministic under seed {seed}: step {index} differs:\n{left!r}\nvs\n{right!r}"
                )
        raise DomainCheckError(f"{env_id}: not deterministic under seed {seed}: episodes differ in length")


def _transcript(env: gym.Env[Any, Any]) -> str:
    base = env.unwrapped
    if not isinstance(base, AgentEnv):
        return ""
    return "\n" + "\n".join(f"[{role}] {text[:400]}" for role, text in base.transcript)


def _check_oracle(env: gym.Env[Any, Any], seed: int, env_id: str, kind: _Kind) -> None:
    base = env.unwrapped
    assert isinstance(base, EpisodeEnv)
    env.reset(seed=seed)
    reward, terminated, truncated = 0.0, False, False
    info: dict[str, Any] = {}
    for _ in range(base.max_turns):
        try:
            action = base.oracle_action()
        except (NotImplementedError, ValueError) as exc:
            raise DomainCheckError(f"{env_id}: no oracle ({exc}); every task family ships an oracle") from exc
        _, reward, terminated, truncated, info = env.step(action)
        _comparable(info)
        if terminated or truncated:
            break
    if not kind.solved(float(reward), terminated, info, base):
        raise DomainCheckError(
            f"{env_id}: the oracle did not solve task {info.get('task_id')} (seed {seed}): reward={reward}, "
            f"terminated={terminated}, truncated={truncated}, info={info}{_transcript(env)}"
        )


def _check_garbage(env: gym.Env[Any, Any], seed: int, env_id: str) -> None:
    env.reset(seed=seed)
    base = _text(env.unwrapped)
    _, reward, terminated, _, info = env.step(base.action_set.format_final(GARBAGE_ANSWER))
    if not terminated or reward != 0.0:
        raise DomainCheckError(
            f"{env_id}: a garbage final answer should end the episode with reward 0, got reward={reward}, "
            f"terminated={terminated}, info={info}"
        )


def _check_malformed(env: gym.Env[Any, Any], seed: int, env_id: str) -> None:
    base = _text(env.unwrapped)
    for text in base.action_set.malformed_examples():
        env.reset(seed=seed)
        observation, reward, terminated, _truncated, info = env.step(text)
        problems = []
        if not observation.startswith("[error]"):
            problems.append(f"observation should start with '[error]', got {observation[:80]!r}")
        if not isinstance(info["action_error"], str):
            problems.append(f"info['action_error'] should explain the error, got {info['action_error']!r}")
        if reward != 0.0:
            problems.append(f"reward should be 0, got {reward}")
        if terminated and not (base.end_on_void_turn and info["void_turn"]):
            problems.append("the episode should go on after a malformed action")
        if problems:
            raise DomainCheckError(f"{env_id}: malformed action {text[:60]!r}: " + "; ".join(problems))


def _check_budget(env: gym.Env[Any, Any], seed: int, env_id: str, kind: _Kind) -> None:
    base = env.unwrapped
    assert isinstance(base, EpisodeEnv)
    env.reset(seed=seed)
    filler = kind.filler(base)
    terminated = truncated = False
    info: dict[str, Any] = {}
    last: Any = filler
    for turn in range(1, base.max_turns + 1):
        last = base.oracle_action() if filler is None else filler
        _, _, terminated, truncated, info = env.step(last)
        _comparable(info)
        counted = info["turn"] if "turn" not in base.deprecated_info else base.turn  # a v0 meaning, kept a release
        if counted != turn or info["turns_left"] != base.max_turns - turn:
            raise DomainCheckError(f"{env_id}: at turn {turn} of {base.max_turns}, info says {info}")
        if kind.filler_must_error() and not isinstance(info["action_error"], str):
            raise DomainCheckError(f"{env_id}: a malformed action should give action_error, got {info}")
        if terminated:
            if filler is None or kind.may_terminate(base, info):
                break
            raise DomainCheckError(f"{env_id}: a malformed action terminated the episode at turn {turn}")
        if truncated and turn != base.max_turns:
            raise DomainCheckError(f"{env_id}: truncated={truncated} at turn {turn} of a {base.max_turns}-turn budget")
        if truncated:
            break
    if not (terminated or truncated):
        raise DomainCheckError(f"{env_id}: the episode did not end within its budget of {base.max_turns} turns")
    if truncated and (info["done_reason"] != base.budget_done_reason or info["turns_left"] != 0):
        raise DomainCheckError(
            f"{env_id}: after the budget, expected done_reason {base.budget_done_reason!r} at turn "
            f"{base.max_turns}, got {info}"
        )
    _check_step_after_end(env, last, env_id)


def _check_step_after_end(env: gym.Env[Any, Any], action: Any, env_id: str) -> None:
    """A ``step`` after the episode ended must raise ``ResetNeeded``."""
    try:
        env.step(action)
    except ResetNeeded:
        return
    raise DomainCheckError(f"{env_id}: step() after the episode ended should raise ResetNeeded")


# ---------------------------------------------------------------------- multi-agent envs

#: Actions every multi-agent text env must survive: each is an invalid move or an error
#: observation, never a crash.
BAD_ACTIONS: tuple[Any, ...] = (None, 123, "", "garbage", "[", "]]]", "\x00" * 10, "x" * 5000, b"bytes")


def check_multiagent_env(env_fn: Any, *, seeds: Sequence[int] = (0, 1), num_cycles: int = 50) -> None:
    """The checks every AgentRL multi-agent env passes (CI runs them over every one).

    * PettingZoo's own API test (``api_test`` for AEC envs, ``parallel_api_test`` for parallel ones)
      and its seed test;
    * seeded determinism of a whole game played with a fixed policy (the first legal move, or a
      fixed text), on two envs;
    * bad actions (``None``, numbers, empty, garbage, huge, bytes) are invalid moves counted in
      ``info["invalid_moves"]`` (AEC) or error observations (parallel), never exceptions; the game
      still ends;
    * an action from an agent that is not due changes nothing (AEC ``step_for``);
    * ``close()`` twice.

    Args:
        env_fn: a zero-argument callable that builds the env (``tictactoe_v0.env``).
        seeds: seeds for the determinism checks.
        num_cycles: cycles for PettingZoo's tests.

    Raises:
        DomainCheckError: naming the check that failed.
    """
    import warnings

    from pettingzoo import AECEnv, ParallelEnv
    from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test

    probe = env_fn()
    try:
        name = probe.metadata.get("name", type(probe).__name__)
        with warnings.catch_warnings():
            # PettingZoo warns that text observations/spaces are not Box/Discrete: expected here.
            warnings.simplefilter("ignore", UserWarning)
            if isinstance(probe, AECEnv):
                api_test(probe, num_cycles=num_cycles)
                seed_test(env_fn, num_cycles=num_cycles)
            elif isinstance(probe, ParallelEnv):
                parallel_api_test(probe, num_cycles=num_cycles)
                parallel_seed_test(env_fn, num_cycles=num_cycles)
            else:
                raise DomainCheckError(
                    f"{name}: expected a PettingZoo AECEnv or ParallelEnv, got {type(probe).__name__}"
                )
    finally:
        probe.close()
    for seed in seeds:
        first, second = _ma_game(env_fn, seed), _ma_game(env_fn, seed)
        if first != second:
            raise DomainCheckError(f"{name}: two games with seed {seed} and the same moves differ")
    _ma_bad_actions(env_fn, name)
    env = env_fn()
    env.close()
    env.close()


def _ma_policy(observation: Any, info: Mapping[str, Any]) -> str:
    legal = info.get("legal_moves") or []
    return str(legal[0]) if legal else "[0]"


def _ma_game(env_fn: Any, seed: int, max_steps: int = 500) -> list[Any]:
    """A transcript of one game played by ``_ma_policy`` for every agent."""
    from pettingzoo import AECEnv

    env = env_fn()
    transcript: list[Any] = []
    try:
        if isinstance(env, AECEnv):
            env.reset(seed=seed)
            for step, agent in enumerate(env.agent_iter()):
                observation, reward, terminated, truncated, info = env.last()
                transcript.append((agent, str(observation), float(reward), terminated, truncated))
                env.step(None if terminated or truncated else _ma_policy(observation, info))
                if step >= max_steps:
                    raise DomainCheckError(f"a game did not end within {max_steps} steps")
        else:
            observations, infos = env.reset(seed=seed)
            for _ in range(max_steps):
                if not env.agents:
                    break
                actions = {a: _ma_policy(observations[a], infos.get(a, {})) for a in env.agents}
                observations, rewards, terms, truncs, infos = env.step(actions)
                transcript.append(
                    (sorted((a, str(o)) for a, o in observations.items()), sorted(rewards.items()),
                     sorted(terms.items()), sorted(truncs.items()))
                )  # fmt: skip
    finally:
        env.close()
    return transcript


def _ma_bad_actions(env_fn: Any, name: str) -> None:
    from pettingzoo import AECEnv

    for bad in BAD_ACTIONS:
        env = env_fn()
        try:
            if isinstance(env, AECEnv):
                env.reset(seed=0)
                due = env.agent_selection
                others = [a for a in env.agents if a != due]
                if others and hasattr(env, "step_for"):
                    before = str(env.observe(due))
                    if env.step_for(others[0], "[1]") or str(env.observe(due)) != before:
                        raise DomainCheckError(f"{name}: an action from {others[0]}, not due, changed the game")
                    if not env.infos[others[0]].get("ignored_actions"):
                        raise DomainCheckError(f"{name}: an action from an agent not due was not logged in its info")
                steps, counted = 0, False
                for _agent in env.agent_iter():
                    _, _, terminated, truncated, _ = env.last()
                    env.step(None if terminated or truncated else bad)
                    # (read before the agents' final dead steps remove their infos)
                    counted = counted or any(info.get("invalid_moves") for info in env.infos.values())
                    steps += 1
                    if steps > 100:
                        raise DomainCheckError(f"{name}: repeated invalid moves ({bad!r}) did not end the game")
                if not counted:
                    raise DomainCheckError(f"{name}: the bad action {bad!r} was not counted in info['invalid_moves']")
            else:
                env.reset(seed=0)
                steps = 0
                while env.agents and steps < 100:
                    env.step(dict.fromkeys(env.agents, bad))
                    steps += 1
                if env.agents:
                    raise DomainCheckError(f"{name}: repeated bad actions ({bad!r}) did not end the episode")
        except DomainCheckError:
            raise
        except Exception as exc:
            raise DomainCheckError(f"{name}: the action {bad!r} crashed the env: {type(exc).__name__}: {exc}") from exc
        finally:
            env.close()


# ---------------------------------------------------------------------- sandboxes
def _expect(*checks: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda result: all(check(result) for check in checks)


#: hostile code every Python sandbox tier must survive the same way, whatever isolates it:
#: ``name -> [(code, expectation), ...]``; after each, ``print(1+1)`` must still give ``2``.
PORTABLE_SANDBOX_ATTACKS: dict[str, list[tuple[str, Callable[[Any], bool]]]] = {
    "garbage on protocol fds": [
        (
            "import os\nfor fd in range(3, 64):\n    try:\n        os.write(fd, b'\\xff' * 100)\n"
            "    except OSError:\n        pass",
            lambda r: True,
        )
    ],
    "binary garbage output": [
        (
            "import sys\nsys.stdout.buffer.write(bytes(range(256)) * 1000)",
            lambda r: r.ok and r.truncated and "\ufffd" in r.output,
        )
    ],
    "print 10 MB": [
        (
            "print('y' * 10_000_000)",
            lambda r: r.ok and r.truncated and "more characters]" in r.output and len(r.output) < 2100,
        )
    ],
    "lone surrogates": [
        ("s = '\ud800'\nprint(s)\ns", lambda r: isinstance(r.output, str)),
        ("print('\udcff')\n\udc80", lambda r: not r.ok),
    ],
    "empty and huge code": [
        ("", lambda r: r.ok and r.output == ""),
        ("s = '" + "a" * 1_000_000 + "'\n# " + "b" * 100_000 + "\nlen(s)", lambda r: r.ok and r.output == "1000000\n"),
    ],
    "null bytes in code": [("print(1)\x00", lambda r: not r.ok)],
}


def check_sandbox_attack(box: Any, name: str) -> None:
    """Run one of :data:`PORTABLE_SANDBOX_ATTACKS` against ``box`` (any Python sandbox tier).

    Each attack must come back as an ``ExecutionResult`` meeting its expectation (never an
    exception), and the sandbox must stay usable. Sandboxes built for ``max_output_chars=2000`` meet
    the output caps these expect.

    Raises:
        DomainCheckError: naming the attack and the result.
    """
    from agentrl.sandboxes.base import ExecutionRequest, ExecutionResult

    for code, expectation in PORTABLE_SANDBOX_ATTACKS[name]:
        result = box.execute(ExecutionRequest(code))
        if not isinstance(result, ExecutionResult) or not expectation(result):
            raise DomainCheckError(f"sandbox attack {name!r}: unexpected result {result!r}"[:2000])
    result = box.execute(ExecutionRequest("print(1+1)"))
    if not (result.ok and result.output == "2\n"):
        raise DomainCheckError(f"sandbox attack {name!r}: the sandbox is no longer usable: {result!r}"[:2000])
