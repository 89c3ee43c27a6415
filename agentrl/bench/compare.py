"""``agentrl bench --compare RUN_A RUN_B``: the differences between two runs, with 95% intervals.

For each env present in both runs, the groups are paired (by agent label when a run holds several
agents for that env; a single group on each side is paired whatever its agent). Per pair: mean reward
and success rate in each run, the difference ``B - A`` with a 95% interval (Welch t for rewards,
Newcombe's hybrid score interval for success rates), marked significant (``*``) when the interval
excludes 0. The intervals treat the two runs as independent samples; when both ran the same seeds
they are conservative.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agentrl.bench.results import LineProblem, load_run
from agentrl.bench.stats import GroupStats, Interval, difference_of_means, difference_of_proportions, summarize

__all__ = ["Comparison", "CompareResult", "compare_runs", "format_comparison"]


@dataclass(frozen=True)
class Comparison:
    """One env, one group from each run, and the differences ``B - A``."""

    env: str
    a: GroupStats
    b: GroupStats
    reward_diff: Interval
    success_diff: Interval


@dataclass
class CompareResult:
    """Every pair, what could not be paired, and the skipped lines of both files."""

    run_a: str
    run_b: str
    pairs: list[Comparison]
    only_a: list[str]
    only_b: list[str]
    problems: list[LineProblem]


def _by_env(groups: Sequence[GroupStats]) -> dict[str, list[GroupStats]]:
    out: dict[str, list[GroupStats]] = {}
    for g in groups:
        out.setdefault(g.env, []).append(g)
    return out


def compare_runs(run_a: str | os.PathLike[str], run_b: str | os.PathLike[str]) -> CompareResult:
    """Pair the groups of two runs (output directories or results files) and compute the differences.

    Raises:
        FileNotFoundError: a run has no results file.
    """
    loaded_a, loaded_b = load_run(run_a), load_run(run_b)
    envs_a, envs_b = _by_env(summarize(list(loaded_a))), _by_env(summarize(list(loaded_b)))
    pairs: list[Comparison] = []
    only_a: list[str] = []
    only_b: list[str] = []
    for env, groups_a in envs_a.items():
        groups_b = envs_b.get(env, [])
        if len(groups_a) == 1 and len(groups_b) == 1:
            matched = [(groups_a[0], groups_b[0])]
        else:
            by_label = {g.agent: g for g in groups_b}
            matched = [(g, by_label[g.agent]) for g in groups_a if g.agent in by_label]
        for a, b in matched:
            success_a = sum(1 for r in a.records if r.get("success"))
            success_b = sum(1 for r in b.records if r.get("success"))
            pairs.append(Comparison(env, a, b, difference_of_means(a.rewards, b.rewards),
                                    difference_of_proportions(success_a, a.episodes, success_b, b.episodes)))
        paired_a = {id(a) for a, _ in matched}
        paired_b = {id(b) for _, b in matched}
        only_a += [g.group_id for g in groups_a if id(g) not in paired_a]
        only_b += [g.group_id for g in groups_b if id(g) not in paired_b]
    only_b += [g.group_id for env, groups in envs_b.items() if env not in envs_a for g in groups]
    return CompareResult(str(run_a), str(run_b), pairs, only_a, only_b, [*loaded_a.problems, *loaded_b.problems])


def _diff(interval: Interval, percent: bool) -> str:
    def f(value: float) -> str:
        if math.isnan(value):
            return "-"
        return f"{value * 100:+.1f}pp" if percent else f"{value:+.3f}"

    mark = " *" if interval.excludes_zero else ""
    return f"{f(interval.estimate)} [{f(interval.low)}, {f(interval.high)}]{mark}"


def format_comparison(result: CompareResult) -> str:
    """The text ``--compare`` prints: one row per pair, then what could not be paired."""
    name_a, name_b = Path(result.run_a).name or result.run_a, Path(result.run_b).name or result.run_b
    header = ["env", f"agent (A: {name_a})", f"agent (B: {name_b})", "n A", "n B", "reward A", "reward B",
              "reward B-A [95% CI]", "success A", "success B", "success B-A [95% CI]"]
    rows = []
    for p in result.pairs:
        rows.append([p.env, p.a.agent, p.b.agent, str(p.a.episodes), str(p.b.episodes),
                     f"{p.a.reward.estimate:.3f}", f"{p.b.reward.estimate:.3f}", _diff(p.reward_diff, False),
                     f"{p.a.success.estimate:.1%}", f"{p.b.success.estimate:.1%}", _diff(p.success_diff, True)])
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in [header, ["-" * w for w in widths], *rows]]
    if not rows:
        lines.append("(no env is in both runs)")
    lines.append("* the 95% interval excludes 0: a significant difference (Welch t for reward, Newcombe for success)")
    for label, only in (("A", result.only_a), ("B", result.only_b)):
        for group in only:
            lines.append(f"only in {label}: {group}")
    return "\n".join(lines)
