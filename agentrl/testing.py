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

from agentrl.core.env import INFO_KEYS, AgentEnv
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
    """Run the checks every domain must pass, raising :class:`DomainCheckError` on the first failure.

    1. ``gymnasium.utils.env_checker.check_env`` on the unwrapped env (spaces, seeding, API).
    2. Determinism: two envs, same seed, same actions -> identical observations, rewards, infos.
    3. Oracle: the task's privileged action sequence earns full reward, over ``seeds``.
    4. Garbage: a wrong final answer earns zero reward and ends the episode.
    5. Malformed: each of the action set's malformed examples gives an ``[error]`` observation and
       ``info["action_error"]``, and the episode goes on.
    6. Budget: malformed turns until the turn budget truncates the episode; a further ``step`` raises.
    7. ``close()`` twice.

    Args:
        env_id: a registered id, e.g. ``"AgentRL/TIRMath-v0"``.
        seeds: reset seeds for the oracle, garbage and malformed checks.
        make_kwargs: keyword arguments for ``gym.make``.
        log: called with one line per passed check (for example ``print``).
    """
    kwargs = dict(make_kwargs or {})
    say = log or (lambda line: None)
    env = gym.make(env_id, **kwargs)
    if callable(getattr(env.unwrapped, "oracle_action", None)):  # a game env: pixels, an oracle policy
        env.close()
        _check_game_domain(env_id, seeds, kwargs, say)
        return
    if getattr(env.unwrapped, "is_desktop_env", False):  # OSWorld: a real desktop, one env at a time
        env.close()
        _check_desktop_domain(env_id, seeds, kwargs, say)
        return
    twin = gym.make(env_id, **kwargs)
    try:
        base = env.unwrapped
        if not isinstance(base, AgentEnv):
            raise DomainCheckError(f"{env_id}: expected an AgentEnv, got {type(base).__name__}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # check_env's advice on text spaces and render modes
            check_env(base, skip_render_check=True)
        say(f"{env_id}: check_env passed")

        _check_determinism(env, twin, seeds[0], env_id)
        say(f"{env_id}: deterministic under seed {seeds[0]}")
        for seed in seeds:
            _check_oracle(env, seed, env_id)
            _check_garbage(env, seed, env_id)
            _check_malformed(env, seed, env_id)
        say(f"{env_id}: oracle, garbage and malformed checks passed for seeds {list(seeds)}")
        _check_budget(env, seeds[0], env_id)
        say(f"{env_id}: turn budget truncates and a further step raises ResetNeeded")
    finally:
        twin.close()
        env.close()
        env.close()
    say(f"{env_id}: close() twice passed")


def _episode(env: gym.Env, seed: int, actions: Sequence[str]) -> list[tuple[Any, ...]]:
    observation, info = env.reset(seed=seed)
    record: list[tuple[Any, ...]] = [(observation, _comparable(info))]
    for action in actions:
        observation, reward, terminated, truncated, info = env.step(action)
        record.append((observation, reward, terminated, truncated, _comparable(info)))
        if terminated or truncated:
            break
    return record


def _comparable(info: Mapping[str, Any]) -> dict[str, Any]:
    missing = [key for key in INFO_KEYS if key not in info]
    if missing:
        raise DomainCheckError(f"info is missing the keys {missing}; every step must carry {list(INFO_KEYS)}")
    return dict(info)


def _check_determinism(env: gym.Env, twin: gym.Env, seed: int, env_id: str) -> None:
    env.reset(seed=seed)
    base = env.unwrapped
    assert isinstance(base, AgentEnv)
    actions = [*base.action_set.malformed_examples()[:1], *base.task.oracle_actions]
    first, second = _episode(env, seed, actions), _episode(twin, seed, actions)
    if first != second:
        for index, (left, right) in enumerate(zip(first, second, strict=False)):
            if left != right:
                raise DomainCheckError(
                    f"{env_id}: not deterministic under seed {seed}: step {index} differs:\n{left!r}\nvs\n{right!r}"
                )
        raise DomainCheckError(f"{env_id}: not deterministic under seed {seed}: episodes differ in length")


def _transcript(env: gym.Env) -> str:
    base = env.unwrapped
    assert isinstance(base, AgentEnv)
    lines = [f"[{role}] {text[:400]}" for role, text in base.transcript]
    return "\n".join(lines)


def _check_oracle(env: gym.Env, seed: int, env_id: str) -> None:
    env.reset(seed=seed)
    base = env.unwrapped
    assert isinstance(base, AgentEnv)
    task = base.task
    if not task.oracle_actions:
        raise DomainCheckError(f"{env_id}: task {task.id} has no oracle_actions; every task family ships an oracle")
    reward, terminated, truncated = 0.0, False, False
    for action in task.oracle_actions:
        _, reward, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
    if not terminated or reward < 1.0:
        raise DomainCheckError(
            f"{env_id}: the oracle did not solve task {task.id} (seed {seed}): reward={reward}, "
            f"terminated={terminated}, truncated={truncated}\n{_transcript(env)}"
        )


def _check_garbage(env: gym.Env, seed: int, env_id: str) -> None:
    env.reset(seed=seed)
    base = env.unwrapped
    assert isinstance(base, AgentEnv)
    _, reward, terminated, _, info = env.step(base.action_set.format_final(GARBAGE_ANSWER))
    if not terminated or reward != 0.0:
        raise DomainCheckError(
            f"{env_id}: a garbage final answer should end the episode with reward 0, got reward={reward}, "
            f"terminated={terminated}, info={info}"
        )


def _check_malformed(env: gym.Env, seed: int, env_id: str) -> None:
    base = env.unwrapped
    assert isinstance(base, AgentEnv)
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


def _check_budget(env: gym.Env, seed: int, env_id: str) -> None:
    base = env.unwrapped
    assert isinstance(base, AgentEnv)
    env.reset(seed=seed)
    malformed = base.action_set.malformed_examples()[0]
    for turn in range(1, base.max_turns + 1):
        _, _, terminated, truncated, info = env.step(malformed)
        if terminated:
            if base.end_on_void_turn:
                return
            raise DomainCheckError(f"{env_id}: a malformed action terminated the episode at turn {turn}")
        if truncated != (turn == base.max_turns):
            raise DomainCheckError(f"{env_id}: truncated={truncated} at turn {turn} of a {base.max_turns}-turn budget")
    if info["done_reason"] != "max_turns" or info["turns_left"] != 0:
        raise DomainCheckError(f"{env_id}: after the budget, expected done_reason 'max_turns', got {info}")
    _check_step_after_end(env, malformed, env_id)


# ---------------------------------------------------------------------- game envs
def _game_episode(env: gym.Env, seed: int, steps: int) -> list[tuple[Any, ...]]:
    """The oracle's first ``steps`` steps: a hash of each frame, the reward and the flags."""
    import hashlib

    import numpy as np

    def digest(observation: Any) -> str:
        pixels = observation["pixels"] if isinstance(observation, dict) else observation
        if isinstance(pixels, np.ndarray):
            return hashlib.sha256(pixels.tobytes()).hexdigest()[:16]
        return str(pixels)

    observation, _ = env.reset(seed=seed)
    record: list[tuple[Any, ...]] = [(digest(observation),)]
    for _ in range(steps):
        observation, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
        record.append((digest(observation), float(reward), terminated, truncated, info["milestones_done"]))
        if terminated or truncated:
            break
    return record


def _check_step_after_end(env: gym.Env, action: Any, env_id: str) -> None:
    """A ``step`` after the episode ended must raise ``ResetNeeded``."""
    try:
        env.step(action)
    except ResetNeeded:
        return
    raise DomainCheckError(f"{env_id}: step() after the episode ended should raise ResetNeeded")


def _check_game_domain(
    env_id: str, seeds: Sequence[int], kwargs: Mapping[str, Any], say: Callable[[str], None]
) -> None:
    """The game-env form of :func:`check_domain`: the oracle wins, frames replay, bad actions are errors."""
    import numpy as np

    env = gym.make(env_id, **kwargs)
    twin = gym.make(env_id, **kwargs)
    try:
        base = env.unwrapped
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            check_env(base, skip_render_check=True)
        say(f"{env_id}: check_env passed")
        first, second = _game_episode(env, seeds[0], 20), _game_episode(twin, seeds[0], 20)
        if first != second:
            raise DomainCheckError(f"{env_id}: not deterministic under seed {seeds[0]}: {first[:3]} vs {second[:3]}")
        say(f"{env_id}: frames replay under seed {seeds[0]}")
        for seed in seeds:
            env.reset(seed=seed)
            terminated = truncated = False
            info: dict[str, Any] = {}
            while not (terminated or truncated):
                _, _, terminated, truncated, info = env.step(base.oracle_action())
            if not (terminated and info["won"] and info["milestones_done"] == info["milestones_total"]):
                raise DomainCheckError(f"{env_id}: the oracle did not complete the game under seed {seed}: {info}")
        say(f"{env_id}: the oracle completes every milestone for seeds {list(seeds)}")
        env.reset(seed=seeds[0])
        if isinstance(base.action_space, gym.spaces.Discrete):
            for bad in (-1, base.action_space.n, 1.5, "up"):
                try:
                    env.step(bad)
                except (AgentRLError, TypeError, ValueError):
                    continue
                raise DomainCheckError(f"{env_id}: step({bad!r}) should raise InvalidActionType")
        else:
            for bad in ("", "zq-garbage", "click(-5, -5)", "x" * 5000):
                _, reward, terminated, _, info = env.step(bad)
                if not isinstance(info["action_error"], str) or terminated or reward != 0:
                    raise DomainCheckError(f"{env_id}: action {bad[:40]!r} should be an error, got {info}")
        say(f"{env_id}: bad actions are refused")
        env.reset(seed=seeds[0])
        steps = 0
        truncated = terminated = False
        while not (terminated or truncated):
            action = base.action_space.sample() if isinstance(base.action_space, gym.spaces.Discrete) else "wait()"
            _, _, terminated, truncated, info = env.step(np.int64(action) if not isinstance(action, str) else action)
            steps += 1
        if truncated and (steps != base.max_steps or info["done_reason"] != "max_steps"):
            raise DomainCheckError(f"{env_id}: truncated after {steps} steps with a budget of {base.max_steps}")
        _check_step_after_end(env, 0 if isinstance(base.action_space, gym.spaces.Discrete) else "wait()", env_id)
        say(f"{env_id}: the episode ends by its budget or the game, then step() raises ResetNeeded")
    finally:
        twin.close()
        env.close()
        env.close()
    say(f"{env_id}: close() twice passed")


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


def _check_desktop_domain(
    env_id: str, seeds: Sequence[int], kwargs: Mapping[str, Any], say: Callable[[str], None]
) -> None:
    """The desktop form of :func:`check_domain`: the task's oracle scores 1 through the GUI, a no-op 0."""
    env = gym.make(env_id, **kwargs)
    try:
        base = env.unwrapped
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            check_env(base, skip_render_check=True, skip_close_check=True)
        say(f"{env_id}: check_env passed")
        for seed in seeds:
            _, info = env.reset(seed=seed)
            reward, terminated, truncated = 0.0, False, False
            for action in base.oracle_actions:
                _, reward, terminated, truncated, info = env.step(action)
                if terminated or truncated:
                    break
            if not (terminated and reward == 1.0):
                raise DomainCheckError(f"{env_id}: the oracle of task {info['task_id']} scored {reward}: {info}")
            env.reset(seed=seed)
            _, reward, terminated, _, info = env.step(
                "DONE" if isinstance(base.action_space, UnicodeText) else {"action_type": "DONE"}
            )
            if not terminated or (reward != 0.0 and not base.task.evaluator.infeasible):
                raise DomainCheckError(f"{env_id}: DONE at once on task {info['task_id']} scored {reward}")
        say(f"{env_id}: the oracle scores 1 and a no-op 0 on the tasks of seeds {list(seeds)}")
        env.reset(seed=seeds[0])
        bad = "```python\nthis is not python(\n```" if isinstance(base.action_space, UnicodeText) else "{not json"
        steps = 0
        terminated = truncated = False
        while not (terminated or truncated):
            _, reward, terminated, truncated, info = env.step(bad)
            steps += 1
            if not isinstance(info["action_error"], str):
                raise DomainCheckError(f"{env_id}: a malformed action should give action_error, got {info}")
        if not truncated or steps != base.max_steps or info["done_reason"] != "max_steps":
            raise DomainCheckError(f"{env_id}: malformed actions should run to the budget of {base.max_steps}: {info}")
        _check_step_after_end(env, "DONE", env_id)
        say(f"{env_id}: malformed actions are errors until the budget truncates; then step() raises ResetNeeded")
    finally:
        env.close()
        env.close()
    say(f"{env_id}: close() twice passed")
