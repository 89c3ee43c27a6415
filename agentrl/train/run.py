"""The plumbing of one training run, shared by the trainers: :class:`PolicyRun`.

It sets up the policy, reference, optimizer, generation backend and rollout engine; collects
batches (overlapped if asked), syncs weights, handles data parallelism, logs, saves and resumes.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentrl.train import distributed
from agentrl.train._torch import import_torch
from agentrl.train.args import TrainArgs
from agentrl.train.checkpoints import (
    latest_checkpoint,
    load_checkpoint,
    rng_state,
    save_checkpoint,
    seed_everything,
    set_rng_state,
)
from agentrl.train.league import LEAGUE, LEARNER_NAME, TrainingLeague, game_results
from agentrl.train.metrics import COUNT_METRICS, MetricsLogger, args_dict
from agentrl.train.models import (
    build_rollout,
    check_env_id,
    load_policy_model,
    policy_state_dict,
    resolve_model_path,
)

__all__ = ["PolicyRun", "token_budget_split"]


def token_budget_split(lengths: Sequence[int], budget: int, parts: int = 1) -> list[list[int]]:
    """Rows (by index) in micro-batches of at most ``budget`` padded tokens each, and at least ``parts`` of them.

    Rows go longest first into the current micro-batch while ``rows x longest row`` stays within ``budget``
    (a row longer than the budget goes alone), and no micro-batch holds more than ``ceil(rows / parts)`` rows.
    Each micro-batch lists its rows in their original order.

    Example:
        >>> token_budget_split([4, 4, 4, 4], budget=8)
        [[0, 1], [2, 3]]
        >>> token_budget_split([10, 2, 3], budget=8)  # the long row alone, the short ones together
        [[0], [1, 2]]
        >>> token_budget_split([1, 1, 1, 1], budget=100, parts=2)
        [[0, 1], [2, 3]]
    """
    if not lengths:
        return []
    cap = -(-len(lengths) // max(parts, 1))
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    split: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for row in order:
        width = max(longest, lengths[row], 1)
        if current and (len(current) + 1 > cap or (len(current) + 1) * width > budget):
            split.append(sorted(current))
            current, longest = [], 0
            width = max(lengths[row], 1)
        current.append(row)
        longest = width
    split.append(sorted(current))
    return split


class PolicyRun:
    """The plumbing of one training run, shared by the trainers.

    Holds the trainable policy (LoRA or full), the frozen reference (when ``kl_coef > 0``), the
    policy's optimizer, the generation backend and the rollout engine, the metrics logger and the
    step counter; collects batches, syncs weights, saves and resumes checkpoints. The trainers keep
    only their algorithm.
    """

    def __init__(self, args: TrainArgs) -> None:
        if args.env_fn is None:
            check_env_id(args.env)  # a typo fails here, not as a run in which every rollout fails
        torch = import_torch()
        from agentrl.rollout import RolloutConfig

        self.args = args
        self.run_dir = Path(args.output_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        seed_everything(args.seed)
        device = args.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        # Under torchrun: one process per device, gradients all-reduced (agentrl.train.distributed).
        self.dist = distributed.init_distributed(device)
        self.device = distributed.rank_device(device, self.dist)

        # A tiny model is built once, by rank 0, before the other ranks read it.
        if not self.dist.is_main:
            distributed.barrier(self.dist)
        self.model_path = resolve_model_path(args.model, self.run_dir)
        if self.dist.is_main:
            distributed.barrier(self.dist)
        targets = [m for m in args.lora_target_modules.split(",") if m] or None
        self.model = load_policy_model(
            self.model_path,
            device=self.device,
            dtype=args.dtype,
            lora_rank=args.lora_rank,
            lora_alpha=args.lora_alpha,
            lora_target_modules=targets,
        )
        self.reference = None
        if args.kl_coef > 0:
            self.reference = load_policy_model(self.model_path, device=self.device, dtype=args.dtype).eval()
            self.reference.requires_grad_(False)
        self.parameters = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(self.parameters, lr=args.learning_rate, weight_decay=args.weight_decay)

        self.rollout_config = RolloutConfig(
            num_envs=args.num_envs,
            mode=args.rollout_mode,
            max_new_tokens=args.max_new_tokens,
            temperature=args.temperature,
            top_p=args.top_p,
            max_turns=args.max_turns,
            max_context_tokens=args.max_context_tokens,
            max_images=args.max_images,
            max_staleness=args.max_staleness,
            keep_failed=True,  # the trainers learn from the ok ones; the failed ones say why (Trainer.step)
        )
        self.backend, self.engine = build_rollout(
            env=args.env,
            env_kwargs=args.env_kwargs,
            env_fn=args.env_fn,
            model_path=self.model_path,
            device=self.device,
            dtype=args.dtype,
            workers=args.env_workers,
            rollout_config=self.rollout_config,
            max_batch_size=args.max_batch_size,
            generation=args.generation,
            seats=_league_as_snapshot(args.seats),
            opponent=_league_as_snapshot(args.opponent),
            team_reward=args.team_reward,
            alternate_seats=args.alternate_seats,
        )
        if args.harness is not None:
            self.engine = _harness_engine(args, self.engine, self.backend, self.rollout_config)
        #: The frozen opponent of ``snapshot`` seats (multi-agent envs), refreshed every ``snapshot_every`` steps.
        self.snapshot = getattr(self.engine, "snapshot_policy", None)
        #: Elo of the learner against its opponents (multi-agent envs with a non-learner seat), and
        #: the league that seats named ``league`` draw each step's opponent from.
        self.league: TrainingLeague | None = None
        self.league_seats: list[str] = []
        self.opponent: str | None = None  # the league opponent of the latest collection
        self._labels: dict[str, str] = {}  # seat player -> rated name (this step's snapshot's league name)
        self._weights: dict[str, float] = {}
        self._loaded_snapshot: str | None = None
        try:
            self._setup_league(args)
        except BaseException:
            self.engine.close()
            self.backend.close()
            if self.snapshot is not None:
                self.snapshot.close()
            raise
        #: Trajectories per request: one per learner seat in multi-agent envs, else one.
        self.per_request = int(getattr(self.engine, "trajectories_per_request", 1))
        self.pad_id = self.backend.tokenizer.pad_token_id or 0
        #: Tokens the generation backend never samples (a VLM's image tokens); the losses mask them too.
        self.suppressed_token_ids: tuple[int, ...] = tuple(getattr(self.backend, "suppressed_token_ids", ()))
        self.step_index = 0
        self.logger: MetricsLogger | None = None
        #: The model the training forward passes go through: ``self.model`` wrapped in DDP when
        #: distributed (set by :meth:`start`, after a resume has loaded the weights).
        self.policy: Any = self.model
        self._collector: Any = None  # a one-thread pool for overlapped collection
        self._pending: tuple[int, Any] | None = None

    def _setup_league(self, args: TrainArgs) -> None:
        from agentrl.rollout.multiagent import LEARNER, SNAPSHOT

        seats = getattr(self.engine, "seats", None)
        if not isinstance(seats, dict) or all(who == LEARNER for who in seats.values()):
            return  # single-agent envs and pure self-play (learner against learner): nothing to rate
        if not _names_league(args.seats, args.opponent):
            fixed = [who for who in seats.values() if who not in (LEARNER, SNAPSHOT)]
            anchor = "random" if "random" in fixed else (fixed[0] if fixed else "")
            self.league = TrainingLeague([anchor] if anchor else [], size=0, k=args.elo_k)  # Elo only
            return
        if SNAPSHOT in _seat_names(args.seats) or args.opponent == SNAPSHOT:
            raise ValueError(
                "seats are played by the league or by the snapshot, not both: use league for every opponent"
            )
        if self.dist.enabled:
            raise ValueError("league training runs in one process for now; drop torchrun or use a fixed opponent")
        if args.overlap_rollouts:
            raise ValueError("league opponents change between steps; turn --overlap-rollouts off to use league seats")
        self.league_seats = [seat for seat, who in seats.items() if who == SNAPSHOT]
        players = [p.strip() for p in args.league_players.split(",") if p.strip()]
        for name in players:  # an unknown player fails here, with the names it could be
            self.engine.set_players(dict.fromkeys(self.league_seats, name))
        self.engine.set_players(dict.fromkeys(self.league_seats, SNAPSHOT))
        self.league = TrainingLeague(players, size=args.league_size, pfsp=args.pfsp, k=args.elo_k)

    def start(self, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """Resume from the newest checkpoint when asked, sync the generation copy, open the logger.

        Args:
            extra: objects with ``load_state_dict`` (a critic, its optimizer, an advantage
                history) restored from the checkpoint under their keys.

        Returns:
            The checkpoint's state (empty when starting fresh).
        """
        state: dict[str, Any] = {}
        checkpoint = latest_checkpoint(self.run_dir) if self.args.resume else None
        if checkpoint is not None:
            state = load_checkpoint(checkpoint)
            self.model.load_state_dict(state["model"])
            self.optimizer.load_state_dict(state["optimizer"])
            for key, target in (extra or {}).items():
                target.load_state_dict(state["extra"][key])
            set_rng_state(state["rng"])
            self.step_index = int(state["step"])
        self.engine.policy_version = self.step_index
        self.policy = distributed.wrap_model(self.model, self.dist)  # DDP broadcasts rank 0's weights
        self.backend.load_weights(policy_state_dict(self.model))
        if self.snapshot is not None and self.args.resume and self.step_index and not self.league_seats:
            self.snapshot.load_weights(policy_state_dict(self.model))  # a resumed run's snapshot: its newest policy
        if self.league is not None and "league" in state:
            self.league.load_state_dict(state["league"])
        elif self.league_seats and self.league is not None:  # the initial policy joins the league
            self.league.add_snapshot(f"snapshot@{self.step_index}", _cpu_copy(policy_state_dict(self.model)))
        if self.dist.is_main:
            self.logger = MetricsLogger(
                self.run_dir,
                tensorboard=self.args.tensorboard,
                resume_step=self.step_index if self.args.resume else None,
            )
            (self.run_dir / "args.json").write_text(json.dumps(args_dict(self.args), indent=2))
        return state

    # ------------------------------------------------------------------ data parallelism

    def shard(self, items: Sequence[Any]) -> list[Any]:
        """The share of the step's tasks that this rank collects (all of them in a single process)."""
        return distributed.shard(items, self.dist)

    def global_counts(self, num_tokens: float, num_rows: float) -> tuple[float, float]:
        """Tokens and rows summed over the ranks: the loss normalisers (see agentrl.train.distributed)."""
        return distributed.global_counts(num_tokens, num_rows, self.dist)

    @property
    def loss_scale(self) -> float:
        """What each rank's loss is multiplied by before backward (DDP averages gradients over ranks)."""
        return distributed.loss_scale(self.dist)

    def micro_batches(self, rows: int, parts: int, lengths: Sequence[int] | None = None) -> list[list[int]]:
        """Row indices split into at least ``parts`` micro-batches, each within the token budget.

        With ``lengths`` (each row's tokens), a micro-batch holds at most ``max_micro_batch_tokens`` padded
        tokens (its rows times its longest row; a longer row goes alone), so the memory of one forward and
        backward pass is bounded whatever the number of rows (a pixel episode in many context windows, 16
        episodes of 4096 tokens). The gradient does not depend on the split: the loss is normalised by the
        whole batch's tokens and rows.

        Every rank must run the same number of backward passes per optimizer step (each is a
        collective under DDP), so the count is the largest over the ranks, and a rank with fewer rows backs an
        empty micro-batch with :meth:`backward_nothing` rather than skipping it.
        """
        budget = max(int(self.args.max_micro_batch_tokens), 1)
        if lengths is None:
            split = [list(range(rows))[i::parts] for i in range(parts)]
        else:
            split = token_budget_split(list(lengths)[:rows], budget, parts)
        if not self.dist.enabled:
            return [part for part in split if part]
        count = distributed.all_reduce_max(len(split), self.dist)
        return split + [[] for _ in range(count - len(split))]

    def batch_logprobs(self, model: Any, batch: Any, *, with_entropy: bool = False) -> Any:
        """:func:`~agentrl.train.logprobs.token_logprobs` of a whole batch without gradients, a micro-batch at a time.

        The gradient-free passes (the behaviour policy's and the reference's logprobs) would otherwise hold the
        activations of every row at once; this keeps them to one micro-batch's (``max_micro_batch_tokens``).
        """
        from agentrl.train.logprobs import token_logprobs

        return self.by_micro_batch(
            batch,
            lambda sub: token_logprobs(
                model,
                sub.input_ids,
                sub.attention_mask,
                temperature=self.args.temperature,
                with_entropy=with_entropy,
                extra_inputs=sub.vision,
                suppress_token_ids=self.suppressed_token_ids,
            )[0],
        )

    def by_micro_batch(self, batch: Any, fn: Any) -> Any:
        """``fn(sub_batch) -> (rows, width)`` tensor over the batch's micro-batches, put back as one (B, T) tensor.

        No gradient; the local rows only (no collective), so ranks need not agree on the split.
        """
        torch = import_torch()
        lengths = [int(n) for n in batch.lengths.tolist()]
        budget = max(int(self.args.max_micro_batch_tokens), 1)
        out = torch.zeros(batch.input_ids.shape, dtype=torch.float32, device=batch.input_ids.device)
        with torch.no_grad():
            for part in token_budget_split(lengths, budget, 1):
                sub = batch.select(part)
                values = fn(sub)
                out[torch.as_tensor(part, device=out.device), : values.shape[1]] = values.float()
        return out

    def no_sync(self, module: Any, defer: bool) -> Any:
        """DDP's ``no_sync`` (skip the all-reduce until the last micro-batch) when ``defer`` and distributed."""
        import contextlib

        if defer and self.dist.enabled and hasattr(module, "no_sync"):
            return module.no_sync()
        return contextlib.nullcontext()

    def backward_nothing(self, module: Any) -> None:
        """A zero loss through a forward of ``module``: an empty micro-batch's share of DDP's all-reduce.

        It must be a real forward pass: DDP arms its gradient all-reduce in ``forward``, so a loss
        built from the parameters alone would skip it and desynchronise the ranks.
        """
        torch = import_torch()
        ids = torch.full((1, 2), self.pad_id, dtype=torch.long, device=self.device)
        out = module(ids, torch.ones_like(ids))  # the policy (HF or peft) and ValueModel take (ids, mask)
        (getattr(out, "logits", out).float().sum() * 0.0).backward()

    def reduce_totals(self, totals: dict[str, float]) -> dict[str, float]:
        """Sums over ranks of per-rank metric sums (tokens-weighted statistics, losses)."""
        return {key: distributed.all_reduce_sum(value, self.dist) for key, value in totals.items()}

    def step_seed(self, step: int | None = None) -> int:
        """The seed of a step's tasks and sampling (this step by default): a function of (seed, step) only."""
        step = self.step_index if step is None else step
        return (self.args.seed * 1_000_003 + step * 7_919) % 2**31

    def collect(self, requests: Sequence[Any], step: int | None = None) -> list[Any]:
        """Run the requests through the engine, sampling seeded by :meth:`step_seed` (and the rank)."""
        if self.league_seats:
            self.choose_opponent(self.step_index if step is None else step)
        seed = (self.step_seed(step) + 104_729 * self.dist.rank) % 2**31
        self.engine.config = dataclasses.replace(self.rollout_config, sampling_seed=seed)
        return self.engine.run(list(requests))

    # ------------------------------------------------------------------ the league

    def choose_opponent(self, step: int) -> str:
        """Draw the league opponent of ``step`` by PFSP (seeded by the run's seed and the step) and seat it."""
        import numpy as np

        from agentrl.rollout.multiagent import SNAPSHOT

        assert self.league is not None and self.snapshot is not None  # league seats imply both
        self._weights = self.league.weights()
        name = self.league.sample(np.random.default_rng([self.args.seed, step, 0x1EA6]))
        if name in self.league.snapshots:
            if self._loaded_snapshot != name:
                self.snapshot.load_weights(self.league.snapshots[name])
                self._loaded_snapshot = name
            self.engine.set_players(dict.fromkeys(self.league_seats, SNAPSHOT))
            self._labels = {SNAPSHOT: name}
        else:
            self.engine.set_players(dict.fromkeys(self.league_seats, name))
            self._labels = {}
        self.opponent = name
        return name

    def rate_games(self, trajectories: Sequence[Any]) -> dict[str, Any]:
        """Count the learner's games in the league, update its Elo; the metrics (empty without opponents).

        Keys: ``elo/learner``, ``elo/<opponent>``, ``league/win_rate/<opponent>``, ``league/games``;
        with league seats also ``league/opponent`` (the step's opponent), ``league/size`` and
        ``league/pfsp/<opponent>`` (the probabilities it was drawn with).
        """
        if self.league is None:
            return {}
        metrics: dict[str, Any] = dict(self.league.record(game_results(trajectories, self._labels)))
        if self.league_seats:
            metrics["league/opponent"] = self.opponent
            metrics["league/size"] = float(len(self._weights))
            metrics.update({f"league/pfsp/{name}": w for name, w in self._weights.items()})
        return metrics

    # ------------------------------------------------------------------ overlapped collection

    def prefetch(self, requests: Sequence[Any], step: int) -> None:
        """Start collecting ``step``'s batch in the background, while this step's update runs.

        The generation copy keeps the weights it has until :meth:`finish_step` syncs new ones
        (between generation batches), so a prefetched trajectory is sampled by the previous
        policy version, or by two versions across its turns: its ``policy_version`` per turn and
        ``staleness`` record which, and ``max_staleness`` bounds it.
        """
        import concurrent.futures

        if self._collector is None:
            self._collector = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="agentrl-collect")
        self._pending = (step, self._collector.submit(self.collect, list(requests), step))

    def rollout_logprobs(self, batch: Any, local_tokens: float) -> tuple[Any, Any, float]:
        """The behaviour policy's logprobs for the loss, the reference's (or ``None``), and their gap.

        The rollout policy's logprobs are recomputed by the training model, or taken from the
        sampler (``recompute_old_logprobs``); the gap between the two, per policy token, is a
        metric. Gradient-free passes use the unwrapped models (through DDP each forward is a collective),
        a micro-batch at a time (:meth:`batch_logprobs`).
        """
        recomputed = self.batch_logprobs(self.model, batch)
        gap = float(((recomputed - batch.old_logprobs).abs() * batch.loss_mask).sum() / max(local_tokens, 1.0))
        old = recomputed if self.args.recompute_old_logprobs else batch.old_logprobs
        return old, self.reference_logprobs(batch), gap

    def reference_logprobs(self, batch: Any) -> Any:
        """The frozen reference model's logprobs of the batch (``None`` without one: no KL term)."""
        return None if self.reference is None else self.batch_logprobs(self.reference, batch)

    def drop_stale(self, trajectories: Sequence[Any]) -> tuple[list[Any], int]:
        """The trajectories within ``max_staleness`` of the current policy, and how many were dropped."""
        bound = self.args.max_staleness
        if bound is None:
            return list(trajectories), 0
        kept = [t for t in trajectories if self.step_index - t.policy_version <= bound]
        return kept, len(trajectories) - len(kept)

    def take_prefetched(self, step: int) -> list[Any] | None:
        """The batch prefetched for ``step`` (waiting for it), or ``None`` when there is none."""
        pending, self._pending = self._pending, None
        if pending is None:
            return None
        pending_step, future = pending
        trajectories = future.result()
        return trajectories if pending_step == step else None

    def finish_step(self, metrics: dict[str, Any], extra: dict[str, Any] | None = None) -> None:
        """Sync the new weights to the generation copy, count the step, log, checkpoint when due."""
        weights = policy_state_dict(self.model)
        self.backend.load_weights(weights)
        self.step_index += 1
        self.engine.policy_version = self.step_index
        every = self.args.snapshot_every
        if self.snapshot is not None and every and self.step_index % every == 0:
            if self.league_seats and self.league is not None:  # a new member of the league
                dropped = self.league.add_snapshot(f"snapshot@{self.step_index}", _cpu_copy(weights))
                if self._loaded_snapshot in dropped:
                    self._loaded_snapshot = None
            else:  # the one snapshot opponent: the newest policy, rated as the learner is now
                self.snapshot.load_weights(weights)
                if self.league is not None:
                    from agentrl.rollout.multiagent import SNAPSHOT

                    self.league.elo.set(SNAPSHOT, self.league.elo.rating(LEARNER_NAME))
            metrics["multiagent/snapshot_step"] = float(self.step_index)
        merged = distributed.all_reduce_mean_dict(
            {k: float(v) for k, v in metrics.items() if isinstance(v, (int, float))}, self.dist
        )
        for key in COUNT_METRICS:  # counts add up over ranks; everything else is a mean
            if key in merged:
                merged[key] *= self.dist.world_size
        metrics.update(merged)
        if self.logger is not None:
            self.logger.log(self.step_index, metrics)
        if self.args.save_every and self.step_index % self.args.save_every == 0:
            self.save(extra)

    def save(self, extra: dict[str, Any] | None = None) -> Path | None:
        """Checkpoint what a resumed run needs to continue exactly (``extra``: objects with ``state_dict``).

        Only rank 0 writes (the ranks hold the same weights); the others wait for it.
        """
        if not self.dist.is_main:
            distributed.barrier(self.dist)
            return None
        state = {
            "step": self.step_index,
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "extra": {key: value.state_dict() for key, value in (extra or {}).items()},
            "rng": rng_state(),
        }
        if self.league is not None:
            state["league"] = self.league.state_dict()
        path = save_checkpoint(self.run_dir, self.step_index, state)
        distributed.barrier(self.dist)
        return path

    def optimizer_step(self, parameters: Sequence[Any], optimizer: Any, max_grad_norm: float) -> float:
        """Clip the gradients (when ``max_grad_norm > 0``), step, return the norm before clipping."""
        torch = import_torch()
        norm = torch.nn.utils.clip_grad_norm_(parameters, max_grad_norm if max_grad_norm > 0 else float("inf"))
        optimizer.step()
        return float(norm)

    def close(self) -> None:
        """Close the engine, the backend, the logger and the process group; idempotent."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending[1].exception()  # let an in-flight collection finish before its engine closes
        if self._collector is not None:
            self._collector.shutdown(wait=True)
            self._collector = None
        self.engine.close()
        self.backend.close()
        if self.snapshot is not None:
            self.snapshot.close()
        if self.logger is not None:
            self.logger.close()
        distributed.destroy(self.dist)


def _harness_engine(args: TrainArgs, engine: Any, backend: Any, config: Any) -> Any:
    """The run's engine replaced by a :class:`~agentrl.rollout.harness.HarnessEngine` over the same backend."""
    import functools

    import gymnasium as gym

    from agentrl.rollout.harness import HarnessEngine

    engine.close()
    try:
        if getattr(engine, "seats", None) is not None:
            raise ValueError("--harness plays single-agent envs; a multi-agent env's seats need the built-in engine")
        make_env = args.env_fn or functools.partial(gym.make, args.env, **args.env_kwargs)
        return HarnessEngine(make_env, args.harness, backend, config)  # type: ignore[arg-type]
    except BaseException:
        backend.close()
        raise


def _seat_names(spec: str) -> list[str]:
    return [name.strip() for name in spec.split(",") if name.strip()]


def _names_league(seats: str, opponent: str) -> bool:
    """Whether a seat is played by the league (``--seats learner,league`` or ``--opponent league``)."""
    return opponent == LEAGUE or LEAGUE in _seat_names(seats)


def _league_as_snapshot(spec: str) -> str:
    """League seats are built as snapshot seats: each step the league seats a snapshot or a built-in player."""
    from agentrl.rollout.multiagent import SNAPSHOT

    return ",".join(SNAPSHOT if name.strip() == LEAGUE else name for name in spec.split(",")) if spec else spec


def _cpu_copy(weights: dict[str, Any]) -> dict[str, Any]:
    """A frozen copy of a policy's weights in CPU memory (a league snapshot)."""
    return {key: value.detach().to("cpu", copy=True) for key, value in weights.items()}
