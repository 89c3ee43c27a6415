"""What a run measures and writes down.

Rollout and policy-update metrics, :class:`MetricsLogger` (``metrics.jsonl``, TensorBoard, the
curves plot) and :func:`args_dict`, the arguments as JSON for ``args.json``.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentrl.core.serialize import json_safe

__all__ = [
    "COUNT_METRICS",
    "MetricsLogger",
    "add_policy_totals",
    "args_dict",
    "failure_warning",
    "multiagent_metrics",
    "policy_update_metrics",
    "rollout_metrics",
]

#: The curves every run's plot shows, and those a multi-agent run's adds when it logged them.
PLOT_KEYS = ("reward/mean", "success/rate", "entropy/mean")
MULTIAGENT_PLOT_KEYS = ("elo/learner", "multiagent/win_rate")

#: Per-rank counts among the metrics: summed over ranks, not averaged.
COUNT_METRICS = ("rollout/trajectories", "rollout/failed")


def rollout_metrics(trajectories: Sequence[Any], requested: int, policy_version: int | None = None) -> dict[str, float]:
    """Reward, success, length, turns, void-turn rate and staleness of a batch of trajectories.

    With ``policy_version`` (the policy about to be updated), staleness is measured against it:
    how many versions behind the newest turn of each trajectory is at update time.
    """
    ok = [t for t in trajectories if t.ok]
    metrics: dict[str, float] = {"rollout/trajectories": float(len(ok)), "rollout/failed": float(requested - len(ok))}
    if not ok:
        return metrics
    rewards = [t.total_reward for t in ok]
    turns = [t for traj in ok for t in traj.all_turns]
    successes = [
        float(bool(traj.turns[-1].info.get("success", traj.turns[-1].reward > 0))) if traj.turns else 0.0 for traj in ok
    ]
    metrics.update(
        {
            "reward/mean": statistics.fmean(rewards),
            "reward/std": statistics.pstdev(rewards),
            "reward/max": max(rewards),
            "success/rate": statistics.fmean(successes),
            "length/policy_tokens": statistics.fmean(sum(p.num_policy_tokens for p in t.pieces()) for t in ok),
            "length/total_tokens": statistics.fmean(sum(len(p.token_ids) for p in t.pieces()) for t in ok),
            "length/turns": statistics.fmean(t.num_turns for t in ok),
            "void_turn/rate": statistics.fmean(float(t.void_turn) for t in turns) if turns else 0.0,
            "staleness/mean": statistics.fmean(
                (policy_version - (t.turns[-1].policy_version if t.turns else t.policy_version))
                if policy_version is not None
                else t.staleness
                for t in ok
            ),
        }
    )
    return metrics


def multiagent_metrics(trajectories: Sequence[Any]) -> dict[str, float]:
    """Per-seat return and win/draw/loss rates of the learner seats of multi-agent games (empty otherwise).

    A trajectory from :class:`~agentrl.rollout.multiagent.MultiAgentRollout` names its seat in
    ``reset_info["seat"]``; the game's result for that seat is read from the last turn's
    ``info["outcome"]["result"]`` (the turn-based games write ``win``, ``loss`` or ``draw``). Keys:
    ``seat/<seat>/return``, ``seat/<seat>/win_rate`` and ``multiagent/win_rate``, ``draw_rate``,
    ``loss_rate`` over every learner seat (against the opponents the run names in ``--seats``); a debate
    adds ``debate/accuracy/round_<t>``, the agents' mean correctness in round ``t``.

    Example:
        >>> from types import SimpleNamespace as NS
        >>> turn = NS(info={"outcome": {"result": {"player_0": "win"}}}, reward=1.0)
        >>> t = NS(ok=True, reset_info={"seat": "player_0"}, turns=[turn], total_reward=1.0)
        >>> multiagent_metrics([t])["seat/player_0/win_rate"]
        1.0
    """
    by_seat: dict[str, list[Any]] = {}
    for t in trajectories:
        seat = t.reset_info.get("seat") if t.ok else None
        if seat is not None:
            by_seat.setdefault(str(seat), []).append(t)
    metrics: dict[str, float] = {}
    results: list[str] = []
    for seat, group in sorted(by_seat.items()):
        metrics[f"seat/{seat}/return"] = statistics.fmean(t.total_reward for t in group)
        seat_results = [_result(t, seat) for t in group]
        known = [r for r in seat_results if r is not None]
        if known:
            metrics[f"seat/{seat}/win_rate"] = known.count("win") / len(known)
            results.extend(known)
    if results:
        for name in ("win", "draw", "loss"):
            metrics[f"multiagent/{name}_rate"] = results.count(name) / len(results)
    metrics.update(_debate_accuracy([t for group in by_seat.values() for t in group]))
    return metrics


def _debate_accuracy(trajectories: Sequence[Any]) -> dict[str, float]:
    """``debate/accuracy/round_<t>``: the agents' mean correctness in round ``t``, over the games.

    It reads a debate env's last ``info["metrics"]["accuracy_per_round"]``; empty for other envs.

    >>> from types import SimpleNamespace as NS
    >>> t = NS(turns=[NS(info={"metrics": {"accuracy_per_round": [0.5, 1.0]}})])
    >>> _debate_accuracy([t, t])
    {'debate/accuracy/round_0': 0.5, 'debate/accuracy/round_1': 1.0}
    """
    rows = []
    for t in trajectories:
        found = (t.turns[-1].info.get("metrics") or {}).get("accuracy_per_round") if t.turns else None
        if isinstance(found, list) and found:
            rows.append([float(x) for x in found])
    if not rows:
        return {}
    rounds = min(len(row) for row in rows)
    return {f"debate/accuracy/round_{r}": statistics.fmean(row[r] for row in rows) for r in range(rounds)}


def _result(trajectory: Any, seat: str) -> str | None:
    """``win``/``loss``/``draw`` of ``seat`` at the end of the game, when the env says."""
    if not trajectory.turns:
        return None
    outcome = trajectory.turns[-1].info.get("outcome") or {}
    result = (outcome.get("result") or {}).get(seat) if isinstance(outcome, dict) else None
    return str(result) if result in ("win", "loss", "draw") else None


def failure_warning(history: Sequence[dict[str, Any]], max_rate: float) -> str | None:
    """A warning for a run's summary when more than ``max_rate`` of its rollouts failed, else ``None``.

    Example:
        >>> steps = [{"rollout/trajectories": 6.0, "rollout/failed": 2.0, "rollout/first_failure": "EnvError: boom"},
        ...          {"rollout/trajectories": 8.0, "rollout/failed": 0.0}]
        >>> failure_warning(steps, 0.1)
        'warning: 2 of 16 rollouts failed (12%, above max_failure_rate=0.1); the first failure: EnvError: boom'
        >>> failure_warning(steps, 0.5) is None
        True
    """
    failed = sum(float(row.get("rollout/failed", 0.0)) for row in history)
    total = failed + sum(float(row.get("rollout/trajectories", 0.0)) for row in history)
    if not total or failed / total <= max_rate:
        return None
    first = next((str(row["rollout/first_failure"]) for row in history if row.get("rollout/first_failure")), "")
    return (
        f"warning: {failed:g} of {total:g} rollouts failed ({failed / total:.0%}, above max_failure_rate={max_rate:g})"
        + (f"; the first failure: {first}" if first else "")
    )


def add_policy_totals(totals: dict[str, float], loss: Any, entropy: Any, mask: Any, stats: dict[str, Any]) -> None:
    """Add one micro-batch's policy loss, entropy and token-weighted loss statistics to ``totals``."""
    tokens = float(mask.sum())
    totals["loss"] = totals.get("loss", 0.0) + loss.item()
    totals["entropy"] = totals.get("entropy", 0.0) + float((entropy * mask).sum())
    for key, value in stats.items():
        totals[key] = totals.get(key, 0.0) + float(value) * tokens


def policy_update_metrics(totals: dict[str, float], tokens: float, updates: int, *, with_kl: bool) -> dict[str, float]:
    """The policy-loss metrics from token-weighted sums over micro-batches (and ranks).

    Example:
        >>> totals = {"loss": 1.0, "entropy": 20.0, "clip_low_frac": 1.0, "clip_high_frac": 0.0,
        ...           "ratio_mean": 10.0, "approx_kl": 0.0}
        >>> policy_update_metrics(totals, tokens=10.0, updates=1, with_kl=False)["entropy/mean"]
        2.0
    """
    metrics = {"loss/policy": totals["loss"] / updates, "entropy/mean": totals["entropy"] / tokens / updates}
    for key in ("clip_low_frac", "clip_high_frac", "ratio_mean", "approx_kl") + (("kl",) if with_kl else ()):
        metrics[f"update/{key}"] = totals[key] / tokens / updates
    return metrics


class MetricsLogger:
    """Per-step metrics to ``metrics.jsonl``, TensorBoard (when installed) and a plot.

    Args:
        run_dir: the run's folder.
        tensorboard: also write TensorBoard event files under ``run_dir/tensorboard``.
        resume_step: when resuming, lines of later steps (from the stopped run) are dropped first,
            so the file holds each step once.
    """

    def __init__(self, run_dir: Path, *, tensorboard: bool = True, resume_step: int | None = None) -> None:
        self.run_dir = run_dir
        self.path = run_dir / "metrics.jsonl"
        run_dir.mkdir(parents=True, exist_ok=True)
        if resume_step is not None and self.path.is_file():
            kept = [line for line in self.path.read_text().splitlines() if json.loads(line)["step"] <= resume_step]
            self.path.write_text("".join(line + "\n" for line in kept))
        elif resume_step is None and self.path.exists():
            self.path.unlink()
        self._writer = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self._writer = SummaryWriter(str(run_dir / "tensorboard"))
            except ImportError:  # tensorboard is an optional extra: JSONL and the plot still work
                self._writer = None

    def log(self, step: int, metrics: dict[str, Any]) -> None:
        """Append one step's metrics."""
        with self.path.open("a") as handle:
            handle.write(json.dumps(json_safe({"step": step, **metrics})) + "\n")
        if self._writer is not None:
            for key, value in metrics.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    self._writer.add_scalar(key, value, step)
            self._writer.flush()

    def history(self) -> list[dict[str, Any]]:
        """Every logged step, in order."""
        if not self.path.is_file():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line.strip()]

    def plot(self, keys: Sequence[str] | None = None) -> Path | None:
        """Draw ``keys`` against the step into ``run_dir/curves.png``; ``None`` without matplotlib.

        The default keys are ``reward/mean``, ``success/rate`` and ``entropy/mean``, then, when the
        run logged them (multi-agent runs), ``elo/learner`` and ``multiagent/win_rate``.
        """
        try:  # a Figure of its own, not pyplot: no global state, no GUI backend, 0.5 s less to import
            from matplotlib.figure import Figure
        except ImportError:
            return None
        rows = self.history()
        if keys is None:
            logged = {key for row in rows for key in row}
            keys = list(PLOT_KEYS) + [key for key in MULTIAGENT_PLOT_KEYS if key in logged]
        figure = Figure(figsize=(7, 2.6 * len(keys)))
        axes = figure.subplots(len(keys), 1, squeeze=False)
        for axis, key in zip(axes[:, 0], keys, strict=True):
            points = [(r["step"], r[key]) for r in rows if isinstance(r.get(key), (int, float))]
            if points:
                axis.plot(*zip(*points, strict=True), marker="o", markersize=3)
            axis.set_ylabel(key)
            axis.grid(alpha=0.3)
        axes[-1, 0].set_xlabel("step")
        figure.tight_layout()
        path = self.run_dir / "curves.png"
        figure.savefig(path, dpi=100)
        return path

    def close(self) -> None:
        """Flush and close TensorBoard."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def args_dict(args: Any) -> dict[str, Any]:
    """A dataclass of arguments as JSON-able values (callables by name)."""
    out = {}
    for spec in dataclasses.fields(args):
        value = getattr(args, spec.name)
        out[spec.name] = json_safe(value) if not callable(value) else getattr(value, "__name__", repr(value))
    return out
