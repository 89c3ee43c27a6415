"""Statistics for benchmark reports: means with t-intervals, Wilson intervals, pass@k, differences.

Everything here is plain Python (no SciPy): the Student t quantile comes from the regularized
incomplete beta function, inverted by bisection.

>>> iv = mean_interval([1.0, 0.0, 1.0, 1.0])
>>> round(iv.estimate, 2), round(iv.low, 3), round(iv.high, 3)
(0.75, -0.046, 1.546)
>>> iv = wilson_interval(8, 10)
>>> round(iv.low, 4), round(iv.high, 4)
(0.4902, 0.9433)
>>> pass_at_k(n=5, c=2, k=2)
0.7
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentrl.core.aggregates import aggregate_for, registered_aggregates

__all__ = [
    "GroupStats",
    "Interval",
    "agent_label",
    "difference_of_means",
    "difference_of_proportions",
    "env_label",
    "format_summary",
    "mean_interval",
    "mean_pass_at_k",
    "pass_at_k",
    "seat_elo",
    "summarize",
    "t_quantile",
    "wilson_interval",
]


@dataclass(frozen=True)
class Interval:
    """A point estimate with a two-sided confidence interval ``[low, high]``.

    ``low``/``high`` are ``nan`` when the interval is undefined (fewer than two samples for a mean).
    """

    estimate: float
    low: float
    high: float
    confidence: float = 0.95

    @property
    def half_width(self) -> float:
        """Half the interval's width (for ``estimate ± half_width`` displays of symmetric intervals)."""
        return (self.high - self.low) / 2

    @property
    def excludes_zero(self) -> bool:
        """True when the whole interval lies on one side of 0 (a significant difference)."""
        return (self.low > 0 or self.high < 0) and not math.isnan(self.low)


# -- distributions ---------------------------------------------------------------------------
def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz, Numerical Recipes 6.4)."""
    tiny, eps = 1e-300, 3e-16
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta function ``I_x(a, b)``."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(log_front)
    # The continued fraction converges fast only on this side of the mean; use the symmetry otherwise.
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def _t_cdf(t: float, df: float) -> float:
    x = df / (df + t * t)
    tail = 0.5 * _betainc(df / 2.0, 0.5, x)
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t distribution with ``df`` degrees of freedom.

    >>> round(t_quantile(0.975, 1), 4), round(t_quantile(0.975, 4), 4), round(t_quantile(0.975, 30), 4)
    (12.7062, 2.7764, 2.0423)
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if df <= 0:
        raise ValueError(f"df must be > 0, got {df}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    if p == 0.5:
        return 0.0
    low, high = 0.0, 1.0
    while _t_cdf(high, df) < p:
        high *= 2.0
        if high > 1e12:
            return math.inf
    for _ in range(200):  # bisection: plenty for double precision
        mid = (low + high) / 2.0
        if _t_cdf(mid, df) < p:
            low = mid
        else:
            high = mid
        if high - low < 1e-12 * max(1.0, high):
            break
    return (low + high) / 2.0


def _z(confidence: float) -> float:
    return statistics.NormalDist().inv_cdf(0.5 + confidence / 2.0)


# -- one sample ------------------------------------------------------------------------------
def mean_interval(values: Sequence[float], confidence: float = 0.95) -> Interval:
    """Mean with a Student t confidence interval.

    Args:
        values: the samples (for example the reward of each episode).
        confidence: the interval's coverage.

    Returns:
        The interval; ``low``/``high`` are ``nan`` with fewer than two samples, and equal to the mean
        when every sample is the same.
    """
    n = len(values)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, confidence)
    mean = math.fsum(values) / n
    if n < 2:
        return Interval(mean, math.nan, math.nan, confidence)
    sd = statistics.stdev(values)
    half = t_quantile(0.5 + confidence / 2.0, n - 1) * sd / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, confidence)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """Success rate with the Wilson score interval (sensible at 0%, 100% and small ``n``).

    Args:
        successes: how many trials succeeded.
        n: how many trials there were.
        confidence: the interval's coverage.
    """
    if n <= 0:
        return Interval(math.nan, math.nan, math.nan, confidence)
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in [0, {n}], got {successes}")
    p = successes / n
    z = _z(confidence)
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    # Rounding noise must not put 0/n's lower end at 1e-17 or n/n's upper end below 1.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Interval(p, low, high, confidence)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` attempts with ``c`` successes (Chen et al. 2021).

    ``1 - C(n - c, k) / C(n, k)``, computed as a product so that large ``n`` does not overflow.

    >>> pass_at_k(10, 0, 1), pass_at_k(10, 10, 5), pass_at_k(4, 1, 1)
    (0.0, 1.0, 0.25)
    """
    if n < 1 or not 0 <= c <= n:
        raise ValueError(f"need n >= 1 and 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"k must be in [1, n={n}], got {k}")
    if n - c < k:
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


def mean_pass_at_k(counts: Sequence[tuple[int, int]], k: int) -> float:
    """pass@k averaged over tasks, each given as ``(n attempts, c successes)``; ``nan`` if none qualify.

    Tasks with fewer than ``k`` attempts are left out (their estimate is undefined).
    """
    values = [pass_at_k(n, c, k) for n, c in counts if n >= k]
    return math.fsum(values) / len(values) if values else math.nan


# -- two samples -----------------------------------------------------------------------------
def difference_of_means(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> Interval:
    """``mean(b) - mean(a)`` with a Welch t-interval (unequal variances, Welch–Satterthwaite df).

    When both samples have zero variance the interval collapses to the difference itself.
    """
    na, nb = len(a), len(b)
    if na == 0 or nb == 0:
        return Interval(math.nan, math.nan, math.nan, confidence)
    diff = math.fsum(b) / nb - math.fsum(a) / na
    if na < 2 or nb < 2:
        return Interval(diff, math.nan, math.nan, confidence)
    va, vb = statistics.variance(a) / na, statistics.variance(b) / nb
    se2 = va + vb
    if se2 == 0:
        return Interval(diff, diff, diff, confidence)
    df = se2 * se2 / ((va * va / (na - 1) if va else 0.0) + (vb * vb / (nb - 1) if vb else 0.0))
    half = t_quantile(0.5 + confidence / 2.0, df) * math.sqrt(se2)
    return Interval(diff, diff - half, diff + half, confidence)


def difference_of_proportions(
    successes_a: int, n_a: int, successes_b: int, n_b: int, confidence: float = 0.95
) -> Interval:
    """``rate(b) - rate(a)`` with Newcombe's hybrid score interval (method 10, from two Wilson intervals).

    Newcombe's (1998) worked example, 56/70 against 48/80:

    >>> iv = difference_of_proportions(48, 80, 56, 70)
    >>> round(iv.estimate, 2), round(iv.low, 4), round(iv.high, 4)
    (0.2, 0.0524, 0.3339)
    """
    if n_a <= 0 or n_b <= 0:
        return Interval(math.nan, math.nan, math.nan, confidence)
    a = wilson_interval(successes_a, n_a, confidence)
    b = wilson_interval(successes_b, n_b, confidence)
    diff = b.estimate - a.estimate
    low = diff - math.sqrt((b.estimate - b.low) ** 2 + (a.high - a.estimate) ** 2)
    high = diff + math.sqrt((b.high - b.estimate) ** 2 + (a.estimate - a.low) ** 2)
    return Interval(diff, max(-1.0, low), min(1.0, high), confidence)


# -- benchmark results -----------------------------------------------------------------------
def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def agent_label(config: Any) -> str:
    """A short human label for an agent config: ``react (smollm2)``, ``oracle``, ``pkg.mod:Class``.

    >>> agent_label({"agent": "react", "backend": "openai", "backend_options": {"model": "qwen"}})
    'react (openai: qwen)'
    >>> agent_label({"agent": "agentrl.agents.harness:HarnessAgent", "agent_options": {"harness": "my.agent:run"}})
    'harness my.agent:run'
    """
    if not isinstance(config, Mapping):
        return str(config)
    label = str(config.get("agent", "?"))
    options = config.get("agent_options")
    if label == "agentrl.agents.harness:HarnessAgent" and isinstance(options, Mapping) and options.get("harness"):
        label = f"harness {options['harness']}"
    backend = config.get("backend")
    if backend:
        options = config.get("backend_options") or {}
        model = options.get("model") or options.get("model_path") if isinstance(options, Mapping) else None
        label += f" ({backend}: {model})" if model else f" ({backend})"
    return label


def env_label(env_id: str, env_kwargs: Any) -> str:
    """``env_id`` plus its non-default ``gym.make`` keyword arguments, if any.

    >>> env_label("AgentRL/TIRMath-v0", {"difficulty": 2})
    'AgentRL/TIRMath-v0 difficulty=2'
    """
    if not env_kwargs:
        return env_id
    return env_id + " " + " ".join(f"{k}={json.dumps(v, default=str)}" for k, v in sorted(env_kwargs.items()))


@dataclass
class GroupStats:
    """Aggregates of the episodes of one (env, env kwargs, env fingerprint, agent config) group."""

    env_id: str
    env: str
    agent: str
    agent_config: Any
    env_fingerprint: str
    episodes: int
    reward: Interval
    success: Interval
    successes: int
    errors: int
    mean_turns: float
    mean_tokens: float
    mean_wall_s: float
    k: int
    pass_at: dict[int, float] = field(default_factory=dict)
    rewards: list[float] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list, repr=False)
    aggregates: dict[str, Any] = field(default_factory=dict)
    """component -> its domain's aggregate over the episodes (:mod:`agentrl.core.aggregates`), where they report it"""

    @property
    def group_id(self) -> str:
        """A stable id for HTML anchors and comparisons: ``env | agent``."""
        return f"{self.env} | {self.agent}"


def _group_key(record: Mapping[str, Any]) -> tuple[str, str, str, str]:
    return (str(record.get("env_id")), _canonical(record.get("env_kwargs") or {}),
            str(record.get("env_fingerprint", "")), _canonical(record.get("agent")))


def summarize(records: Sequence[Mapping[str, Any]], confidence: float = 0.95) -> list[GroupStats]:
    """Group episode records by env and agent and compute every statistic the report shows.

    Groups are ordered as they first appear in ``records``. When two groups would get the same
    label (same env and agent names but, say, different temperatures or env code versions), a
    short hash of what differs is appended so they stay apart.
    """
    groups: dict[tuple[str, str, str, str], list[Mapping[str, Any]]] = {}
    for record in records:
        groups.setdefault(_group_key(record), []).append(record)
    labels: dict[tuple[str, str, str, str], tuple[str, str]] = {}
    for key, members in groups.items():
        first = members[0]
        labels[key] = (env_label(key[0], first.get("env_kwargs") or {}), agent_label(first.get("agent")))
    counts: dict[tuple[str, str], int] = {}
    for label in labels.values():
        counts[label] = counts.get(label, 0) + 1
    out = []
    for key, members in groups.items():
        env, agent = labels[key]
        if counts[(env, agent)] > 1:
            # Same names, different config or env code: tell them apart by a hash of what differs.
            agent += " #" + hashlib.sha256("|".join(key[2:]).encode()).hexdigest()[:6]
        rewards = [float(r.get("reward", 0.0)) for r in members]
        successes = sum(1 for r in members if r.get("success"))
        tasks: dict[tuple[Any, Any], list[bool]] = {}
        for r in members:
            tasks.setdefault((r.get("seed"), r.get("episode", r.get("task_id"))), []).append(bool(r.get("success")))
        k = max((len(v) for v in tasks.values()), default=1)
        pass_at = {}
        if k > 1:
            counts_nc = [(len(v), sum(v)) for v in tasks.values()]
            for kk in sorted({1, k}):
                pass_at[kk] = mean_pass_at_k(counts_nc, kk)
        n = len(members)
        out.append(GroupStats(
            env_id=key[0], env=env, agent=agent, agent_config=members[0].get("agent"), env_fingerprint=key[2],
            episodes=n, reward=mean_interval(rewards, confidence), success=wilson_interval(successes, n, confidence),
            successes=successes, errors=sum(1 for r in members if r.get("error")),
            mean_turns=math.fsum(float(r.get("turns", 0) or 0) for r in members) / n,
            mean_tokens=math.fsum(float(r.get("tokens", 0) or 0) for r in members) / n,
            mean_wall_s=math.fsum(float(r.get("wall_s", 0) or 0) for r in members) / n,
            k=k, pass_at=pass_at, rewards=rewards, records=list(members), aggregates=_aggregates(members),
        ))
    return out


def _aggregates(members: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Each registered domain aggregate over the episodes that report its component (HealthBench's score...)."""
    out: dict[str, Any] = {}
    for aggregate in registered_aggregates():
        values = [
            r["reward_components"][aggregate.component]
            for r in members
            if isinstance(r.get("reward_components"), dict) and aggregate.component in r["reward_components"]
        ]
        if values:
            out[aggregate.component] = aggregate.load()(values)
    return out


#: a single-seat view of a game against a fixed opponent (reward +1 win, 0 draw, -1 loss)
_SEAT_ID = re.compile(r"^AgentRL-MA/.+-vs-(?P<opponent>[\w.]+)-v\d+$")


def seat_elo(group: GroupStats, resamples: int = 1000) -> tuple[str, Interval] | None:
    """The agent's Elo on a row of ``AgentRL-MA/<game>-vs-<opponent>-vN``, the fixed opponent held at 1000.

    Fitted to the row's games (:mod:`agentrl.league.fitted_elo`), with a bootstrap interval over them; returns the
    opponent's name and the interval, or None for any other env.
    """
    match = _SEAT_ID.match(group.env_id)
    if match is None or not group.rewards:
        return None
    from agentrl.league.fitted_elo import elo_intervals

    opponent = match["opponent"]
    games = [("agent", opponent, min(1.0, max(0.0, (reward + 1.0) / 2.0))) for reward in group.rewards]
    rating, low, high = elo_intervals(games, opponent, 1000.0, resamples=resamples)["agent"]
    return opponent, Interval(rating, low, high)


def _fmt(value: float, digits: int = 3) -> str:
    return "-" if math.isnan(value) else f"{value:.{digits}f}"


def format_summary(groups: Sequence[GroupStats]) -> str:
    """The summary table ``agentrl bench`` prints: one row per env x agent.

    Reward is the mean with its 95% t-interval half-width; success is the rate with its Wilson
    interval; pass@k appears when tasks were attempted more than once (``--k``).
    """
    header = ["env", "agent", "episodes", "mean reward ± 95% CI", "success [95% CI]", "pass@k",
              "mean turns", "mean tokens", "errors"]
    rows = []
    for g in groups:
        half = g.reward.half_width
        reward = _fmt(g.reward.estimate) + ("" if math.isnan(half) else f" ± {half:.3f}")
        success = f"{g.success.estimate:.1%} [{g.success.low:.1%}, {g.success.high:.1%}]"
        passk = ", ".join(f"@{k}={_fmt(v)}" for k, v in g.pass_at.items()) or "-"
        rows.append([g.env, g.agent, str(g.episodes), reward, success, passk, f"{g.mean_turns:.2f}",
                     f"{g.mean_tokens:.0f}", str(g.errors)])
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    numeric = {2, 6, 7, 8}

    def line(cells: Sequence[str]) -> str:
        pairs = enumerate(zip(cells, widths, strict=True))
        return "  ".join(c.rjust(w) if i in numeric else c.ljust(w) for i, (c, w) in pairs).rstrip()

    lines = [line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)]
    for g in groups:
        elo = seat_elo(g)
        if elo is not None:
            opponent, iv = elo
            lines.append(f"elo against the {opponent} player (held at 1000), {g.env} | {g.agent}: {iv.estimate:.0f} "
                         f"[{iv.low:.0f}, {iv.high:.0f}] (Bradley-Terry, bootstrap over {g.episodes} games)")
        for component, result in g.aggregates.items():
            registered = aggregate_for(component)
            label = registered.label if registered is not None else component
            if hasattr(result, "score") and getattr(result, "n_samples", 1):
                note = f" ({result.describe()})" if hasattr(result, "describe") else ""
                interval = f"[{result.ci_low:.3f}, {result.ci_high:.3f}]"
                lines.append(f"{label}, {g.env} | {g.agent}: {result.score:.3f} {interval}{note}")
            elif isinstance(result, (int, float)):
                lines.append(f"{label}, {g.env} | {g.agent}: {_fmt(float(result))}")
    return "\n".join(lines)
