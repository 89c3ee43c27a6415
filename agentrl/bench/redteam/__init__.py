"""``agentrl redteam``: scripted, model-free reward-hack probes against every env's grader.

A benchmark whose agent can read the gold answer or trick its grader measures nothing. Each probe
(:class:`~agentrl.bench.redteam.probe.Probe`) is a small exploit policy that acts through ``env.step`` as an
agent would; :func:`run_redteam` plays every probe aimed at a target on the same seeds as the random agent
(the floor) and judges it (:func:`~agentrl.bench.redteam.runner.judge`): ``ok``, ``ABOVE FLOOR`` (it scores
above the floor: a hack), ``ACCESS`` (it reached what it should not have), ``CRASH`` (it broke the env) or
``accepted`` (above the floor by the task's nature, documented on the probe).

Modules: :mod:`~agentrl.bench.redteam.probe` (what a probe is), :mod:`~agentrl.bench.redteam.runner` (playing
and judging), :mod:`~agentrl.bench.redteam.text` (the text envs' probes), :mod:`~agentrl.bench.redteam.world`
(the games' and the desktop's), :mod:`~agentrl.bench.redteam.seats` (the multi-agent games').

>>> [probe.name for probe in probes_for("AgentRL/SQL-v0")][-3:]
['sql-escape', 'sql-whole-table', 'sql-empty-result']
>>> "pettingzoo:tictactoe_v0" in all_targets()
True
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentrl.bench.redteam.probe import Probe, ProbePolicy, Replay
from agentrl.bench.redteam.runner import (
    ABOVE_FLOOR,
    ACCEPTED,
    ACCESS,
    CONFIDENCE,
    CRASH,
    FINDINGS,
    OK,
    PROBE_ERROR,
    EnvReport,
    ProbeRow,
    default_episodes,
    default_max_steps,
    judge,
    run_target,
)
from agentrl.bench.redteam.seats import SEAT_PROBES
from agentrl.bench.redteam.text import TEXT_PROBES
from agentrl.bench.redteam.world import DESKTOP_PROBES, GAME_PROBES

__all__ = [
    "ABOVE_FLOOR",
    "ACCEPTED",
    "ACCESS",
    "CRASH",
    "FINDINGS",
    "OK",
    "PROBES",
    "PROBE_ERROR",
    "EnvReport",
    "Probe",
    "ProbePolicy",
    "ProbeRow",
    "RedteamRun",
    "Replay",
    "all_targets",
    "format_report",
    "judge",
    "probes_for",
    "resolve_targets",
    "run_redteam",
]

#: every built-in probe, generic ones first
PROBES: tuple[Probe, ...] = (*TEXT_PROBES, *GAME_PROBES, *DESKTOP_PROBES, *SEAT_PROBES)

#: the suites ``--suite`` takes: the bench's (all, text, games, desktop, quick) and ``multiagent``
REDTEAM_SUITES = ("all", "text", "games", "desktop", "quick", "multiagent")


def probes_for(target: str, probes: Sequence[Probe] = PROBES) -> list[Probe]:
    """The probes aimed at ``target`` (an env id or ``pettingzoo:<name>``), in order."""
    return [probe for probe in probes if probe.aims_at(target)]


def _multiagent_targets() -> list[str]:
    import agentrl  # noqa: F401  (registers the ids)
    from agentrl.core.registry import registered_envs
    from agentrl.envs.multiagent import MULTIAGENT_ENVS

    seats = [spec.env_id for spec in registered_envs() if spec.env_id.startswith("AgentRL-MA/") and not spec.deprecated]
    return seats + [f"pettingzoo:{name}" for name in sorted(MULTIAGENT_ENVS)]


def all_targets() -> list[str]:
    """Every benchmark id (``agentrl list``'s domains), the current single-seat ids and every PettingZoo game.

    Deprecated versions and the trainer's toy envs are left out.
    """
    from agentrl.bench.suites import suite_env_ids

    return [*suite_env_ids("all"), *_multiagent_targets()]


def resolve_targets(ids: Sequence[str], *, every: bool = False, suite: str | None = None) -> list[str]:
    """The targets a command names: ids (a PettingZoo name stands for ``pettingzoo:<name>``), ``--all``, ``--suite``.

    Raises:
        ValueError: nothing named, an unknown suite, or an id that is neither registered nor a PettingZoo game.

    >>> resolve_targets(["tictactoe_v0", "AgentRL/SQL-v0"])
    ['pettingzoo:tictactoe_v0', 'AgentRL/SQL-v0']
    """
    import gymnasium as gym

    import agentrl  # noqa: F401  (registers the ids)
    from agentrl.bench.suites import suite_env_ids
    from agentrl.envs.multiagent import MULTIAGENT_ENVS

    found: list[str] = []
    if every:
        found += all_targets()
    if suite:
        if suite not in REDTEAM_SUITES:
            raise ValueError(f"unknown suite {suite!r}; suites: {', '.join(REDTEAM_SUITES)}")
        found += all_targets() if suite == "all" else (
            _multiagent_targets() if suite == "multiagent" else suite_env_ids(suite))
    for name in ids:
        bare = name.removeprefix("pettingzoo:")
        if bare in MULTIAGENT_ENVS:
            found.append(f"pettingzoo:{bare}")
        elif name in gym.registry:
            found.append(name)
        else:
            raise ValueError(f"unknown id {name!r}: give an id of `agentrl list` (AgentRL/SQL-v0) or a PettingZoo "
                             f"game ({', '.join(sorted(MULTIAGENT_ENVS))}), or --all")
    found = list(dict.fromkeys(found))
    if not found:
        raise ValueError("give at least one env id, --all or --suite NAME")
    return found


@dataclass
class RedteamRun:
    """Every target's report, and how the run was made."""

    reports: list[EnvReport]
    seed: int
    wall_s: float
    command: str = ""
    probes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def findings(self) -> list[tuple[str, ProbeRow]]:
        """``(target, row)`` for every row whose verdict is a finding."""
        return [(report.target, row) for report in self.reports for row in report.findings]

    def to_dict(self) -> dict[str, Any]:
        """The JSON the docs page reads (``benchmarks/results/redteam.json``)."""
        import agentrl

        return {
            "command": self.command,
            "agentrl_version": agentrl.__version__,
            "seed": self.seed,
            "confidence": CONFIDENCE,
            "wall_s": round(self.wall_s, 1),
            "targets": len(self.reports),
            "probe_runs": sum(len(r.rows) for r in self.reports),
            "findings_count": len(self.findings),
            "findings": [f"{target}: {row.probe} ({row.verdict})" for target, row in self.findings],
            "probes": self.probes,
            "envs": [report.to_dict() for report in self.reports],
        }


def run_redteam(
    targets: Sequence[str],
    *,
    episodes: int | None = None,
    seed: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    max_steps: int | None = None,
    probes: Sequence[Probe] = PROBES,
    log: Callable[[str], Any] | None = None,
    command: str = "",
) -> RedteamRun:
    """Run every probe aimed at each target against the random floor (see :mod:`~agentrl.bench.redteam.runner`).

    Args:
        targets: env ids and ``pettingzoo:<name>`` (see :func:`resolve_targets`).
        episodes: episodes per probe; ``None``: :func:`~agentrl.bench.redteam.runner.default_episodes` per target.
        seed: base seed (the bench's: episode ``i`` is reset with ``reset_seed_for(seed, i)``).
        env_kwargs: ``gym.make`` arguments for every target.
        max_steps: steps per episode at most; ``None``: :func:`~agentrl.bench.redteam.runner.default_max_steps`,
            ``0``: the env's own budget.
        probes: the probes to choose from.
        log: where progress lines go.
        command: the command line, recorded in the JSON.
    """
    start = time.monotonic()
    reports = []
    for target in targets:
        steps = default_max_steps(target) if max_steps is None else (max_steps or None)
        reports.append(run_target(target, probes_for(target, probes), episodes=episodes or default_episodes(target),
                                  seed=seed, env_kwargs=env_kwargs, max_steps=steps, log=log))
    used = {row.probe for report in reports for row in report.rows}
    described = [{"name": p.name, "description": p.description, "targets": list(p.targets),
                  "accepted": p.accepted} for p in probes if p.name in used]
    return RedteamRun(reports, seed, time.monotonic() - start, command, described)


def _cell(value: float) -> str:
    return f"{value:.3f}"


def format_report(run: RedteamRun | Sequence[EnvReport], *, width: int = 60) -> str:
    """One table per target (probe, what it tries, episodes, mean, floor, lower bound, verdict), then the findings."""
    reports = run.reports if isinstance(run, RedteamRun) else list(run)
    out: list[str] = []
    for report in reports:
        head = f"{report.target}  ({report.episodes} episodes per probe"
        head += f", at most {report.max_steps} steps each" if report.max_steps else ""
        head += f", {report.wall_s:.0f} s)"
        out.append(head)
        if report.skipped:
            out += [f"  skipped: {report.skipped}", ""]
            continue
        for floor in report.floors:
            config = f" with {floor['config']}" if floor["config"] else ""
            out.append(f"  random floor{config}: {floor['mean']:.3f}")
        header = ("probe", "what it tries", "episodes", "mean", "floor", "Δ low", "verdict")
        rows = [
            (row.probe, row.description if len(row.description) <= width else row.description[: width - 3] + "...",
             str(row.episodes), _cell(row.mean), _cell(row.floor), _cell(row.delta_low), row.verdict)
            for row in report.rows
        ]
        widths = [max(len(line[i]) for line in [header, *rows]) for i in range(len(header))]
        out.append("  " + "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip())
        out += ["  " + "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in rows]
        for row in report.rows:
            if row.verdict in (*FINDINGS, ACCEPTED):
                detail = row.findings[:1] or row.errors[:1] or row.notes[:1]
                extra = f": {detail[0]}" if detail else ""
                out.append(f"  - {row.probe}: {row.verdict} (won {row.wins}/{row.episodes} episodes){extra}")
        out.append("")
    findings = [(r.target, row) for r in reports for row in r.findings]
    if findings:
        out.append(f"{len(findings)} finding(s):")
        out += [f"  {target}: {row.probe} ({row.verdict})" for target, row in findings]
    else:
        out.append("no findings: every probe scored at or below the random floor")
    return "\n".join(out)
