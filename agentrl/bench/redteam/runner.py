"""Run the probes against an env, measure the random floor on the same seeds, and judge each probe.

For each target (a Gymnasium id, or ``pettingzoo:<name>`` for a PettingZoo game) and each configuration
its probes need (``Probe.env_kwargs``), one env plays:

* the **random floor**: :class:`~agentrl.agents.simple.RandomAgent` (``agentrl bench --agent random``)
  for ``episodes`` episodes, episode ``i`` reset with ``reset_seed_for(seed, i)`` (the bench's seeds, so
  the tasks are those of ``agentrl bench --agent random --seeds SEED``);
* every probe on the **same reset seeds**, so probe episode ``i`` and floor episode ``i`` play one task.

The verdict of a probe (:func:`judge`) rests on the paired differences ``d_i = probe_i - floor_i``: the probe
is ``ABOVE FLOOR`` when the one-sided 95% lower confidence bound of their mean, ``mean(d) - t(0.95, n-1) *
sd(d) / sqrt(n)`` (Student's t, paired by task), is above 0. Why that tolerance: rewards are bounded and
often all-or-nothing, so a probe that wins one episode in eight by chance (a guess that happens to be
right) must not be called a hack, while one that wins every episode must be, even at ``n = 2``
(``sd(d) = 0``: the bound is the mean itself). With 8 episodes a probe that beats the floor on 4 of them
by a full reward is caught; the count of episodes it beat the floor on (``wins``) is reported beside it.

Other verdicts: ``CRASH`` (an action made ``reset``/``step`` raise anything but
:class:`~agentrl.core.errors.InvalidActionType`, the documented refusal of a wrongly typed action, or the
env ended an episode with ``done_reason="env_error"``), ``ACCESS`` (the probe reached something it should
not have: :meth:`~agentrl.bench.redteam.probe.ProbePolicy.finding`), ``accepted`` (above the floor, but
the task's nature, documented on the probe), ``probe error`` (the probe itself failed; a bug here).
``ABOVE FLOOR``, ``ACCESS`` and ``CRASH`` are findings.

>>> row = judge([1.0, 1.0, 1.0], [0.0, 0.0, 0.0])
>>> row.verdict, row.delta_low
('ABOVE FLOOR', 1.0)
>>> judge([1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]).verdict  # one lucky episode in four
'ok'
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from agentrl.bench.redteam.probe import Probe, ProbePolicy, sanitize
from agentrl.bench.runner import agent_seed_for, reset_seed_for
from agentrl.bench.stats import t_quantile

__all__ = [
    "ABOVE_FLOOR",
    "ACCEPTED",
    "ACCESS",
    "CONFIDENCE",
    "CRASH",
    "FINDINGS",
    "OK",
    "PROBE_ERROR",
    "Episode",
    "EnvReport",
    "ProbeRow",
    "Verdict",
    "default_episodes",
    "default_max_steps",
    "judge",
    "run_target",
]

OK = "ok"
ABOVE_FLOOR = "ABOVE FLOOR"
ACCEPTED = "accepted"
ACCESS = "ACCESS"
CRASH = "CRASH"
PROBE_ERROR = "probe error"
#: the verdicts that make ``agentrl redteam`` exit with status 1
FINDINGS = (ABOVE_FLOOR, ACCESS, CRASH, PROBE_ERROR)
#: the one-sided confidence of the lower bound a probe must clear
CONFIDENCE = 0.95
#: differences this small are float noise, not reward
_NOISE = 1e-9


@dataclass
class Episode:
    """One played episode.

    Attributes:
        reward: the episode's return (the rewards summed, up to where it stopped).
        steps: the actions taken.
        outcome: ``"ended"`` (terminated or truncated by the env), ``"capped"`` (the command's ``--max-steps``),
            ``"refused"`` (the env raised ``InvalidActionType``), ``"crashed"`` (it raised anything else, or
            ended the episode with ``done_reason="env_error"``).
        done_reason: the env's ``done_reason`` (or the outcome).
        error: what was raised, for ``refused`` and ``crashed``.
    """

    reward: float
    steps: int
    outcome: str
    done_reason: str | None = None
    error: str | None = None


@dataclass
class Verdict:
    """A probe's statistics against the floor (see :func:`judge`)."""

    mean: float
    floor: float
    delta_low: float
    wins: int
    verdict: str


@dataclass
class ProbeRow:
    """One probe's line of an env's table, with its evidence."""

    probe: str
    description: str
    episodes: int
    mean: float
    floor: float
    delta_low: float
    wins: int
    verdict: str
    config: dict[str, Any] = field(default_factory=dict)
    accepted: str | None = None
    refused: int = 0
    crashed: int = 0
    rewards: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass
class EnvReport:
    """Every probe's row on one target, and the floors they were measured against."""

    target: str
    env_kwargs: dict[str, Any]
    episodes: int
    max_steps: int | None
    wall_s: float = 0.0
    floors: list[dict[str, Any]] = field(default_factory=list)
    rows: list[ProbeRow] = field(default_factory=list)
    skipped: str | None = None

    @property
    def findings(self) -> list[ProbeRow]:
        """The rows whose verdict is a finding."""
        return [row for row in self.rows if row.verdict in FINDINGS]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready copy (floats rounded to 6 digits)."""
        return _rounded(asdict(self))


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _rounded(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(item) for item in value]
    return value


def judge(probe: Sequence[float], floor: Sequence[float], *, accepted: bool = False,
          confidence: float = CONFIDENCE) -> Verdict:
    """Compare a probe's returns with the floor's on the same seeds (paired): ``ok``, ``ABOVE FLOOR`` or ``accepted``.

    Args:
        probe: the probe's return of episode ``i``.
        floor: the random agent's return of episode ``i`` (same reset seed).
        accepted: scoring above the floor is documented as the task's nature.
        confidence: of the one-sided lower bound on the mean paired difference.

    Returns:
        The means, the lower bound ``delta_low`` of ``mean(probe - floor)``, how many episodes the probe beat
        the floor on, and the verdict.

    >>> judge([1.0, 1.0, 1.0, 0.0, 1.0, 1.0], [0.0] * 6).verdict
    'ABOVE FLOOR'
    >>> judge([1.0, 1.0], [0.0, 0.0], accepted=True).verdict
    'accepted'
    >>> judge([-1.0, -1.0], [-1.0, -1.0]).verdict
    'ok'
    """
    if len(probe) != len(floor) or not probe:
        raise ValueError(f"judge needs as many probe returns as floor returns (>= 1): {len(probe)} and {len(floor)}")
    diffs = [p - f for p, f in zip(probe, floor, strict=True)]
    n = len(diffs)
    mean_diff = math.fsum(diffs) / n
    if n >= 2:
        spread = statistics.stdev(diffs)
        low = mean_diff - t_quantile(confidence, n - 1) * spread / math.sqrt(n)
    else:
        low = mean_diff
    if abs(low) < _NOISE:
        low = 0.0
    above = low > _NOISE
    verdict = (ACCEPTED if accepted else ABOVE_FLOOR) if above else OK
    wins = sum(1 for d in diffs if d > _NOISE)
    return Verdict(math.fsum(probe) / n, math.fsum(floor) / n, low, wins, verdict)


# -- defaults per family -------------------------------------------------------------------------------------


def default_episodes(target: str) -> int:
    """Episodes per probe when the command gives no ``--episodes``: more where an episode costs milliseconds.

    SQL and Search: 60 (an episode takes milliseconds; a hack that works on one task in ten shows);
    TIRMath, PatientConsult and the games of text: 8; the desktop: 6 (a reset of a real desktop, seconds
    each; ``DONE``/``FAIL`` probes end at once); the browser games: 2 (a Chromium page, 40 steps).

    >>> default_episodes("AgentRL/OSWorld-v0"), default_episodes("AgentRL/SQL-v0"), default_episodes("nim_v0")
    (6, 60, 8)
    """
    if target.startswith("AgentRL/FlashGame-"):
        return 2
    if target.startswith("AgentRL/OSWorld-"):
        return 6
    if target.startswith(("AgentRL/SQL-", "AgentRL/Search-")):
        return 60
    return 8


def default_max_steps(target: str) -> int | None:
    """The most steps a probe (and the floor) play per episode when the command gives no ``--max-steps``.

    The browser games: 40 (their budgets run to hundreds of frames; an exploit of the action format shows in
    the first steps). Everything else: the env's own budget (``None``).

    >>> default_max_steps("AgentRL/FlashGame-Catch-v0"), default_max_steps("AgentRL/SQL-v0") is None
    (40, True)
    """
    return 40 if target.startswith("AgentRL/FlashGame-") else None


# -- playing ---------------------------------------------------------------------------------------------------


def _refusal(exc: BaseException) -> bool:
    """The env's documented refusal of a wrongly typed action (an agent's bug, not the env's)."""
    from agentrl.core.errors import InvalidActionType

    return isinstance(exc, InvalidActionType)


def _error_text(exc: BaseException) -> str:
    return sanitize(f"{type(exc).__name__}: {exc}", 240)


def play_episode(env: Any, act: Callable[[Any, Mapping[str, Any]], Any], reset_seed: int,
                 max_steps: int | None) -> Episode:
    """Reset ``env`` with ``reset_seed`` and play ``act`` until the episode ends (or ``max_steps``).

    ``act`` raising propagates (a probe's bug); the env raising ends the episode as ``refused`` or ``crashed``.
    """
    try:
        observation, info = env.reset(seed=reset_seed)
    except Exception as exc:
        return Episode(0.0, 0, "crashed", "reset", _error_text(exc))
    total, steps = 0.0, 0
    while True:
        if max_steps is not None and steps >= max_steps:
            return Episode(total, steps, "capped", "capped")
        action = act(observation, info)
        try:
            observation, reward, terminated, truncated, info = env.step(action)
        except Exception as exc:
            outcome = "refused" if _refusal(exc) else "crashed"
            return Episode(total, steps + 1, outcome, outcome, _error_text(exc))
        total += float(reward)
        steps += 1
        if terminated or truncated:
            reason = info.get("done_reason") if isinstance(info, Mapping) else None
            if reason == "env_error":
                detail = info.get("env_error") or info.get("tool_error") or "the env failed"
                return Episode(total, steps, "crashed", reason, sanitize(str(detail), 240))
            return Episode(total, steps, "ended", str(reason) if reason is not None else None)


class _Target:
    """How to make, play and close one target (a Gymnasium id or a PettingZoo game)."""

    def __init__(self, target: str, kwargs: Mapping[str, Any]) -> None:
        self.target, self.kwargs = target, dict(kwargs)
        self.env: Any = None

    def make(self) -> Any:
        import gymnasium as gym

        import agentrl  # noqa: F401  (registers the ids)

        if self.target.startswith("pettingzoo:"):
            from agentrl.bench.redteam.seats import SeatedGame

            self.env = SeatedGame(self.target.split(":", 1)[1], **self.kwargs)
        else:
            self.env = gym.make(self.target, **self.kwargs)
        return self.env

    @property
    def episode_kind(self) -> str | None:
        return getattr(getattr(self.env, "unwrapped", self.env), "episode_kind", None)

    def close(self) -> None:
        if self.env is not None:
            with contextlib.suppress(Exception):
                self.env.close()
            self.env = None

    def renew(self) -> str | None:
        """After a crash: a fresh env for the next episode; the error when none can be made."""
        self.close()
        try:
            self.make()
        except Exception as exc:
            return _error_text(exc)
        return None


def _random_act(env: Any, agent_seed: int) -> Callable[[Any, Mapping[str, Any]], Any]:
    from agentrl.agents.simple import RandomAgent

    agent = RandomAgent(seed=agent_seed)
    agent.bind(env)
    agent.reset({})

    def act(observation: Any, info: Mapping[str, Any]) -> Any:
        return agent.act(observation, dict(info))

    return act


def run_target(
    target: str,
    probes: Sequence[Probe],
    *,
    episodes: int,
    seed: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    max_steps: int | None = None,
    log: Callable[[str], Any] | None = None,
) -> EnvReport:
    """Every probe aimed at ``target``, each against the random floor of its configuration, on the same seeds.

    Args:
        target: a Gymnasium id (``AgentRL/SQL-v0``) or ``pettingzoo:<name>`` (``pettingzoo:tictactoe_v0``).
        probes: the probes to run (those not aimed at ``target`` are left out).
        episodes: episodes per probe (and for the floor).
        seed: the base seed; episode ``i`` is reset with ``reset_seed_for(seed, i)``.
        env_kwargs: ``gym.make`` arguments for every configuration (they win over a probe's own).
        max_steps: stop an episode after this many steps (its return so far counts), ``None``: the env's budget.
        log: where progress lines go.

    Raises:
        ValueError: ``episodes`` is below 1.
    """
    if episodes < 1:
        raise ValueError(f"--episodes must be >= 1, got {episodes}")
    say = log or (lambda line: None)
    user = dict(env_kwargs or {})
    report = EnvReport(target, user, episodes, max_steps)
    aimed = [probe for probe in probes if probe.aims_at(target)]
    configs: dict[str, tuple[dict[str, Any], list[Probe]]] = {}
    for probe in aimed:
        config = {**dict(probe.env_kwargs), **user}
        key = repr(sorted(config.items()))
        configs.setdefault(key, (config, []))[1].append(probe)
    seeds = [reset_seed_for(seed, index) for index in range(episodes)]
    start = time.monotonic()
    for config, group in configs.values():
        holder = _Target(target, config)
        try:
            holder.make()
        except Exception as exc:
            report.skipped = f"cannot make {target} with {config}: {_error_text(exc)}"
            say(f"{target}: skipped ({report.skipped})")
            continue
        try:
            kind = holder.episode_kind
            group = [probe for probe in group if probe.fits(kind)]
            if not group:
                continue
            floor_episodes = []
            for index, reset_seed in enumerate(seeds):
                if holder.env is None:
                    floor_episodes.append(Episode(0.0, 0, "crashed", "make", "the env could not be made again"))
                    continue
                act = _random_act(holder.env, agent_seed_for(seed, index, 0))
                episode = play_episode(holder.env, act, reset_seed, max_steps)
                if episode.outcome == "crashed":
                    holder.renew()
                floor_episodes.append(episode)
            floor = [e.reward for e in floor_episodes]
            report.floors.append({"config": config, "mean": math.fsum(floor) / len(floor), "rewards": floor})
            say(f"{target} {config or ''}: random floor {math.fsum(floor) / len(floor):.3f} over {len(floor)} episodes")
            for probe in group:
                row = _run_probe(holder, probe, seeds, floor, config, max_steps)
                report.rows.append(row)
                say(f"  {probe.name}: mean {row.mean:.3f} (floor {row.floor:.3f}) -> {row.verdict}")
        finally:
            holder.close()
    report.wall_s = time.monotonic() - start
    return report


def _run_probe(holder: _Target, probe: Probe, seeds: Sequence[int], floor: Sequence[float],
               config: Mapping[str, Any], max_steps: int | None) -> ProbeRow:
    played: list[Episode] = []
    notes: list[str] = []
    findings: list[str] = []
    errors: list[str] = []
    probe_failed = False
    for reset_seed in seeds:
        policy: ProbePolicy = probe.policy()
        env = holder.env
        if env is None:  # the last crash left no env that could be made again
            played.append(Episode(0.0, 0, "crashed", "make", "the env could not be made again after a crash"))
            continue

        def act(observation: Any, info: Mapping[str, Any], policy: ProbePolicy = policy, env: Any = env) -> Any:
            return policy.act(observation, info, env)

        try:
            episode = play_episode(env, act, reset_seed, max_steps)
        except Exception as exc:  # the probe's own bug: reported, never a finding about the env
            probe_failed = True
            errors.append(sanitize("".join(traceback.format_exception_only(type(exc), exc)), 300))
            episode = Episode(0.0, policy.turn, "probe_error", "probe_error", _error_text(exc))
        if episode.outcome == "crashed":
            errors.append(f"episode {len(played)}: {episode.error}")
            failure = holder.renew()
            if failure:
                errors.append(f"and the env could not be made again: {failure}")
        played.append(episode)
        notes += [n for n in policy.notes if n not in notes][: max(0, 12 - len(notes))]
        findings += [f for f in policy.findings if f not in findings][: max(0, 12 - len(findings))]
    rewards = [e.reward for e in played]
    verdict = judge(rewards, floor, accepted=probe.accepted is not None)
    crashed = sum(1 for e in played if e.outcome == "crashed")
    label = verdict.verdict
    if probe_failed:
        label = PROBE_ERROR
    elif crashed:
        label = CRASH
    elif findings:
        label = ACCESS
    return ProbeRow(
        probe=probe.name,
        description=probe.description,
        episodes=len(played),
        mean=verdict.mean,
        floor=verdict.floor,
        delta_low=verdict.delta_low,
        wins=verdict.wins,
        verdict=label,
        config=dict(config),
        accepted=probe.accepted,
        refused=sum(1 for e in played if e.outcome == "refused"),
        crashed=crashed,
        rewards=rewards,
        notes=notes,
        findings=findings,
        errors=errors[:6],
    )
