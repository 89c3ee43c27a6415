"""``agentrl bench --compare RUN_A RUN_B``: the differences between two runs, with 95% intervals.

For each env present in both runs, the groups are matched (by agent label when a run holds several
agents for that env; a single group on each side is matched whatever its agent). Per match: mean reward
and success rate in each run, and the difference ``B - A``, marked significant (``*``).

When the two groups played the same tasks (the same env, reset seeds and attempts: the same ``--seeds``,
``--episodes`` and ``--k``), their episodes are paired and the test is paired (:mod:`agentrl.bench.paired`):
a bootstrap over tasks for the reward difference, McNemar's exact test for success. Only where no episode
pairs does it fall back to independent samples: Welch's t for rewards, Newcombe's hybrid score interval for
success rates. Each row says which test it used.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentrl.bench.lock import LockDrift, lock_drift
from agentrl.bench.paired import PairedComparison, paired_comparison
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
    paired: PairedComparison | None = None
    """the paired test over the episodes both groups played; ``None`` where none pairs"""

    @property
    def test(self) -> str:
        """``paired (N pairs)`` or ``independent``."""
        return f"paired ({self.paired.pairs} pairs)" if self.paired is not None else "independent"

    @property
    def success_significant(self) -> bool:
        """McNemar's test (or the task bootstrap, with several attempts) where paired, else Newcombe's interval."""
        return self.paired.success_significant if self.paired is not None else self.success_diff.excludes_zero


@dataclass
class CompareResult:
    """Every pair, what could not be paired, and the skipped lines of both files."""

    run_a: str
    run_b: str
    pairs: list[Comparison]
    only_a: list[str]
    only_b: list[str]
    problems: list[LineProblem]
    drift: list[str] = field(default_factory=list)
    """what differs between the env locks of matched groups (compared anyway: ``allow_drift``)"""


def _by_env(groups: Sequence[GroupStats]) -> dict[str, list[GroupStats]]:
    out: dict[str, list[GroupStats]] = {}
    for g in groups:
        out.setdefault(g.env, []).append(g)
    return out


def _latest_lock(group: GroupStats) -> Any:
    return next((r.get("lock") for r in reversed(group.records) if r.get("lock")), None)


def compare_runs(
    run_a: str | os.PathLike[str], run_b: str | os.PathLike[str], allow_drift: bool = False
) -> CompareResult:
    """Pair the groups of two runs (output directories or results files) and compute the differences.

    Raises:
        FileNotFoundError: a run has no results file.
        LockDrift: the env locks of two matched groups differ (:mod:`agentrl.bench.lock`: the env's code, data,
            judge or library versions moved between the runs), unless ``allow_drift``.
    """
    loaded_a, loaded_b = load_run(run_a), load_run(run_b)
    envs_a, envs_b = _by_env(summarize(list(loaded_a))), _by_env(summarize(list(loaded_b)))
    pairs: list[Comparison] = []
    only_a: list[str] = []
    only_b: list[str] = []
    drift: list[str] = []
    for env, groups_a in envs_a.items():
        groups_b = envs_b.get(env, [])
        if len(groups_a) == 1 and len(groups_b) == 1:
            matched = [(groups_a[0], groups_b[0])]
        else:
            by_label = {g.agent: g for g in groups_b}
            matched = [(g, by_label[g.agent]) for g in groups_a if g.agent in by_label]
        for a, b in matched:
            drift.extend(f"{env}: {line}" for line in lock_drift(_latest_lock(a), _latest_lock(b)))
            paired = paired_comparison(a.records, b.records)
            if paired is not None:
                pairs.append(Comparison(env, a, b, paired.reward_diff, paired.success_diff, paired))
                continue
            success_a = sum(1 for r in a.records if r.get("success"))
            success_b = sum(1 for r in b.records if r.get("success"))
            pairs.append(Comparison(env, a, b, difference_of_means(a.rewards, b.rewards),
                                    difference_of_proportions(success_a, a.episodes, success_b, b.episodes)))
        paired_a = {id(a) for a, _ in matched}
        paired_b = {id(b) for _, b in matched}
        only_a += [g.group_id for g in groups_a if id(g) not in paired_a]
        only_b += [g.group_id for g in groups_b if id(g) not in paired_b]
    only_b += [g.group_id for env, groups in envs_b.items() if env not in envs_a for g in groups]
    drift = list(dict.fromkeys(drift))
    if drift and not allow_drift:
        raise LockDrift(
            f"the two runs did not score on the same env, so their scores are not comparable: {'; '.join(drift)}. "
            "Re-run one of them, or compare anyway with --allow-drift"
        )
    return CompareResult(str(run_a), str(run_b), pairs, only_a, only_b, [*loaded_a.problems, *loaded_b.problems],
                         drift)


def _diff(interval: Interval, percent: bool, significant: bool | None = None) -> str:
    def f(value: float) -> str:
        if math.isnan(value):
            return "-"
        return f"{value * 100:+.1f}pp" if percent else f"{value:+.3f}"

    mark = " *" if (interval.excludes_zero if significant is None else significant) else ""
    return f"{f(interval.estimate)} [{f(interval.low)}, {f(interval.high)}]{mark}"


def format_comparison(result: CompareResult) -> str:
    """The text ``--compare`` prints: one row per pair, then what could not be paired."""
    name_a, name_b = Path(result.run_a).name or result.run_a, Path(result.run_b).name or result.run_b
    header = ["env", f"agent (A: {name_a})", f"agent (B: {name_b})", "n A", "n B", "test", "reward A", "reward B",
              "reward B-A [95% CI]", "success A", "success B", "success B-A [95% CI]", "McNemar p"]
    rows = []
    for p in result.pairs:
        mcnemar = p.paired.mcnemar_text if p.paired is not None else "-"
        rows.append([p.env, p.a.agent, p.b.agent, str(p.a.episodes), str(p.b.episodes), p.test,
                     f"{p.a.reward.estimate:.3f}", f"{p.b.reward.estimate:.3f}", _diff(p.reward_diff, False),
                     f"{p.a.success.estimate:.1%}", f"{p.b.success.estimate:.1%}",
                     _diff(p.success_diff, True, p.success_significant), mcnemar])
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in [header, ["-" * w for w in widths], *rows]]
    if not rows:
        lines.append("(no env is in both runs)")
    if any(p.paired is not None for p in result.pairs):
        lines.append("paired: the episodes of A and B that played the same task and attempt; B-A per task, bootstrap "
                     "over tasks; McNemar p (only A : only B succeeded) decides success at one attempt per task")
    if any(p.paired is None for p in result.pairs):
        lines.append("independent: no episode pairs (other seeds or tasks); Welch t for reward, Newcombe for success")
    lines.append("* a significant difference at 95%")
    for line in result.drift:
        lines.append(f"drift (--allow-drift): {line}")
    for label, only in (("A", result.only_a), ("B", result.only_b)):
        for group in only:
            lines.append(f"only in {label}: {group}")
    return "\n".join(lines)
