"""The base of the GRPO and PPO trainers: :class:`Trainer`, the step and the run loop around their algorithm."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from agentrl.core.errors import AgentRLError
from agentrl.train.args import TrainArgs
from agentrl.train.metrics import multiagent_metrics, rollout_metrics
from agentrl.train.run import PolicyRun

__all__ = ["RolloutsFailed", "Trainer"]


class RolloutsFailed(AgentRLError, RuntimeError):
    """Every rollout of a step failed: nothing to learn from, and the next step would fail the same way."""


class Trainer:
    """What the GRPO and PPO trainers share around their algorithm: the step, the run loop, saving.

    Subclasses set ``self.args`` and ``self.run`` (a :class:`PolicyRun`), implement
    ``requests(step)`` (what to collect) and ``update(trajectories)`` (how to learn from it), and
    name in ``_extra()`` the objects besides the policy that a checkpoint must hold.
    """

    args: TrainArgs
    run: PolicyRun

    def _extra(self) -> dict[str, Any]:
        return {}

    @property
    def step_index(self) -> int:
        """Steps done so far (resumed runs start from their checkpoint's)."""
        return self.run.step_index

    def requests(self, step: int) -> list[Any]:
        """The rollout requests of ``step``: seeded by (seed, step) only, so resumed runs repeat them."""
        raise NotImplementedError

    def update(self, trajectories: list[Any]) -> dict[str, Any]:
        """Learn from a batch of trajectories; return the update's metrics."""
        raise NotImplementedError

    def step(self) -> dict[str, Any]:
        """Collect one batch, learn from it, sync the generation copy; return the step's metrics.

        With ``overlap_rollouts`` the batch was collected in the background during the previous
        step's update, and the next step's collection starts before this update.
        """
        args, run = self.args, self.run
        started = time.perf_counter()
        step = run.step_index
        requests = self.requests(step)
        trajectories = run.take_prefetched(step) if args.overlap_rollouts else None
        if trajectories is None:
            trajectories = run.collect(requests, step)
        generated = time.perf_counter()  # (with overlap: the time spent waiting for the batch)
        failures = [t.failure or "no reason given" for t in trajectories if not t.ok]
        # Trajectories dropped for staleness (--max-staleness) are the overlap working as asked, not a
        # broken env or model: a step of only those learns nothing, and the next one starts afresh.
        broken = [f for f in failures if not f.startswith("stale:")]
        if requests and not any(t.ok for t in trajectories) and (broken or not failures):
            first = broken[0] if broken else "no trajectory came back"
            raise RolloutsFailed(
                f"step {step + 1}: all {len(failures) or len(requests)} rollouts failed, so the run stops; "
                f"the first failure: {first}"
            )
        if args.overlap_rollouts and step + 1 < args.max_steps:
            run.prefetch(self.requests(step + 1), step + 1)

        expected = len(requests) * run.per_request  # multi-agent games: one trajectory per learner seat
        metrics: dict[str, Any] = dict(rollout_metrics(trajectories, expected, policy_version=step))
        metrics.update(multiagent_metrics(trajectories))
        metrics.update(run.rate_games(trajectories))  # the learner's Elo and results per opponent
        if failures:
            metrics["rollout/first_failure"] = failures[0][:500]  # text: in metrics.jsonl, not in the plots
        trajectories, stale = run.drop_stale(trajectories)  # too-stale trajectories leave first
        metrics["filter/stale"] = float(stale)
        metrics.update(self.update(trajectories))
        metrics["time/generate_s"] = generated - started
        metrics["time/step_s"] = time.perf_counter() - started
        run.finish_step(metrics, extra=self._extra())
        return metrics

    def train(self) -> list[dict[str, Any]]:
        """Step until ``max_steps``; checkpoint at the end; write the plot. Returns every step's metrics."""
        history = []
        while self.run.step_index < self.args.max_steps:
            history.append(self.step())
        self.save()
        if self.run.logger is not None:
            self.run.logger.plot()
        return history

    def save(self) -> Path | None:
        """Checkpoint everything a resumed run needs to continue exactly (rank 0 writes)."""
        return self.run.save(extra=self._extra())

    def close(self) -> None:
        """Close the engine, the backend, the logger and the process group; idempotent."""
        self.run.close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
