"""What the GRPO and PPO trainers share: models, the rollout engine, weight sync, metrics, checkpoints.

Each trainer file (:mod:`agentrl.train.grpo`, :mod:`agentrl.train.ppo`) reads top to bottom and
calls these helpers for the plumbing that is not the algorithm.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import shutil
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentrl.core.errors import DependencyNotInstalled
from agentrl.core.serialize import json_safe
from agentrl.train import distributed

__all__ = [
    "MetricsLogger",
    "Trainer",
    "add_policy_totals",
    "policy_update_metrics",
    "PolicyRun",
    "TrainArgs",
    "build_rollout",
    "latest_checkpoint",
    "load_checkpoint",
    "load_policy_model",
    "policy_state_dict",
    "resolve_model_path",
    "rollout_metrics",
    "save_checkpoint",
    "seed_everything",
]


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        raise DependencyNotInstalled("torch", extra="train") from exc
    return torch


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (CPU and CUDA)."""
    import numpy as np

    torch = _torch()
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def resolve_model_path(model: str, output_dir: Path) -> Path:
    """A model folder: ``model`` itself, or for ``"tiny"`` / ``"tiny-llama"`` a tiny model built in the run."""
    if model in ("tiny", "tiny-qwen2", "tiny-llama"):
        from agentrl.agents.backends.tiny import build_tiny_model

        family = "llama" if model == "tiny-llama" else "qwen2"
        return build_tiny_model(output_dir / f"tiny-{family}", family=family)  # type: ignore[arg-type]
    if model in ("smollm2", "SmolLM2-135M-Instruct"):
        from agentrl.agents.backends.smollm2 import smollm2_path

        return Path(smollm2_path())
    path = Path(model)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(
            f"no model at {path} (expected a Hugging Face folder with config.json); pass --model PATH, "
            "or 'tiny' for a tiny random model, or 'smollm2' for the embedded SmolLM2-135M-Instruct"
        )
    return path


def load_policy_model(
    path: Path,
    *,
    device: str,
    dtype: str,
    lora_rank: int = 0,
    lora_alpha: int = 16,
    lora_dropout: float = 0.0,
    lora_target_modules: Sequence[str] | None = None,
) -> Any:
    """The trainable causal LM: full fine-tuning, or LoRA adapters through ``peft`` when ``lora_rank > 0``."""
    torch = _torch()
    import transformers

    transformers.utils.logging.disable_progress_bar()  # per-tensor bars would drown the step lines
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype)).to(device)
    if lora_rank > 0:
        try:
            import peft
        except ImportError as exc:
            raise DependencyNotInstalled("peft", extra="train") from exc
        config = peft.LoraConfig(
            r=lora_rank,
            lora_alpha=lora_alpha,
            lora_dropout=lora_dropout,
            target_modules=list(lora_target_modules) if lora_target_modules else "all-linear",
            task_type="CAUSAL_LM",
        )
        model = peft.get_peft_model(model, config)
    model.train()
    return model


def policy_state_dict(model: Any) -> dict[str, Any]:
    """The plain (merged) weights of a policy, keyed as the base model's own ``state_dict``.

    For a LoRA model the adapters are merged into a copy of the affected weights, so a generation
    backend holding the base architecture can load them; the training model is left unmerged.
    """
    unwrapped = getattr(model, "module", model)  # DistributedDataParallel
    if not hasattr(unwrapped, "merge_adapter"):
        return {k: v.detach() for k, v in unwrapped.state_dict().items()}
    unwrapped.merge_adapter()
    try:
        state = {}
        for key, value in unwrapped.get_base_model().state_dict().items():
            if "lora_" in key:
                continue
            state[key.replace(".base_layer", "")] = value.detach().clone()
        return state
    finally:
        unwrapped.unmerge_adapter()


def build_rollout(
    *,
    env: str,
    env_kwargs: dict[str, Any],
    env_fn: Callable[[], Any] | None,
    model_path: Path,
    device: str,
    dtype: str,
    workers: str,
    rollout_config: Any,
    max_batch_size: int,
    generation: str = "transformers",
) -> tuple[Any, Any]:
    """The generation backend and the :class:`~agentrl.rollout.RolloutEngine` of a run.

    ``generation="transformers"`` generates with :class:`TransformersBackend` (any device);
    ``"vllm"`` with :class:`~agentrl.train.vllm_policy.VLLMPolicy` (a CUDA GPU and ``pip install vllm``).
    """
    import functools

    import gymnasium as gym

    import agentrl  # noqa: F401  (registers the AgentRL/* ids)
    from agentrl.agents.backends.transformers_backend import TransformersBackend
    from agentrl.rollout import RolloutEngine

    make_env = env_fn or functools.partial(gym.make, env, **env_kwargs)
    if workers == "thread":
        factory: Any = make_env
    elif workers == "process":
        from agentrl.rollout.process_workers import ProcessWorkers

        factory = ProcessWorkers(make_env)
    elif workers == "ray":
        from agentrl.rollout.ray_workers import RayWorkers

        factory = RayWorkers(make_env)
    else:
        raise ValueError(f"env_workers must be 'thread', 'process' or 'ray', got {workers!r}")
    if generation == "vllm":
        from agentrl.train.vllm_policy import VLLMPolicy

        backend: Any = VLLMPolicy(model_path, dtype=dtype, max_num_seqs=max_batch_size)
    elif generation == "transformers":
        # A short batching window: the engine's concurrent episodes ask within a millisecond or two
        # of each other, and every millisecond waited is a millisecond of the step.
        backend = TransformersBackend(
            model_path, device=device, dtype=dtype, max_batch_size=max_batch_size, batch_wait_ms=1.0
        )
    else:
        raise ValueError(f"generation must be 'transformers' or 'vllm', got {generation!r}")
    return backend, RolloutEngine(factory, backend, config=rollout_config)


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
    turns = [t for traj in ok for t in traj.turns]
    successes = [
        float(bool(traj.turns[-1].info.get("success", traj.turns[-1].reward > 0))) if traj.turns else 0.0 for traj in ok
    ]
    metrics.update(
        {
            "reward/mean": statistics.fmean(rewards),
            "reward/std": statistics.pstdev(rewards),
            "reward/max": max(rewards),
            "success/rate": statistics.fmean(successes),
            "length/policy_tokens": statistics.fmean(t.num_policy_tokens for t in ok),
            "length/total_tokens": statistics.fmean(len(t.token_ids) for t in ok),
            "length/turns": statistics.fmean(len(t.turns) for t in ok),
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

    def plot(self, keys: Sequence[str] = ("reward/mean", "success/rate", "entropy/mean")) -> Path | None:
        """Draw ``keys`` against the step into ``run_dir/curves.png``; ``None`` without matplotlib."""
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            return None
        rows = self.history()
        figure, axes = plt.subplots(len(keys), 1, figsize=(7, 2.6 * len(keys)), squeeze=False)
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
        plt.close(figure)
        return path

    def close(self) -> None:
        """Flush and close TensorBoard."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None


# ---------------------------------------------------------------------- checkpoints


def save_checkpoint(run_dir: Path, step: int, state: dict[str, Any], *, keep: int = 2) -> Path:
    """Write ``state`` (tensors, optimizer states, JSON-able values) as ``checkpoints/step-N``, atomically.

    The newest ``keep`` checkpoints are kept. A checkpoint is complete when its folder exists:
    it is written under a temporary name and renamed.
    """
    torch = _torch()
    root = run_dir / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step-{step:08d}"
    tmp = root / f".tmp-step-{step:08d}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    torch.save(state, tmp / "state.pt")
    (tmp / "meta.json").write_text(json.dumps({"step": step, "saved_at": time.time()}))
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    for old in sorted(root.glob("step-*"))[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The newest complete checkpoint of a run, or ``None``."""
    found = sorted((run_dir / "checkpoints").glob("step-*"))
    return found[-1] if found else None


def load_checkpoint(path: Path) -> dict[str, Any]:
    """The state saved by :func:`save_checkpoint`."""
    torch = _torch()
    return torch.load(path / "state.pt", weights_only=False)


def rng_state() -> dict[str, Any]:
    """Python, NumPy and torch RNG states (for exact resumption)."""
    import numpy as np

    torch = _torch()
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore :func:`rng_state`."""
    import numpy as np

    torch = _torch()
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])


def args_dict(args: Any) -> dict[str, Any]:
    """A dataclass of arguments as JSON-able values (callables by name)."""
    out = {}
    for spec in dataclasses.fields(args):
        value = getattr(args, spec.name)
        out[spec.name] = json_safe(value) if not callable(value) else getattr(value, "__name__", repr(value))
    return out


# ---------------------------------------------------------------------- arguments and the run


@dataclass
class TrainArgs:
    """What every trainer shares; every field is also a command-line option of ``agentrl train``.

    Attributes:
        env: the Gymnasium id of the env to train on.
        env_kwargs: keyword arguments for ``gym.make``.
        env_fn: a callable that builds the env (overrides ``env``; Python API only).
        model: a Hugging Face model folder, ``tiny`` (a tiny random model, for tests) or ``smollm2``.
        output_dir: the run folder (metrics, plot, TensorBoard, checkpoints).
        max_steps: training steps.
        max_new_tokens: tokens the policy may sample per turn.
        max_turns: an engine-side cap on turns per episode (None: the env's own budget).
        max_context_tokens: episodes end (truncated) before the sequence would exceed this.
        temperature: sampling temperature of the rollouts (the loss uses the same).
        top_p: nucleus sampling mass of the rollouts (1.0 keeps logprobs exact).
        learning_rate: AdamW learning rate of the policy.
        weight_decay: AdamW weight decay.
        max_grad_norm: gradient clipping norm (0: no clipping).
        grad_accum_steps: micro-batches per optimizer step (gradient accumulation).
        updates_per_step: optimizer steps over each collected batch (1: on-policy).
        clip_low: ratio epsilon below 1 (None: the loss type's default).
        clip_high: ratio epsilon above 1 (None: the loss type's default; clip-higher is 0.28).
        dual_clip: dual-clip bound for negative advantages (None: off).
        kl_coef: weight of the KL to the frozen initial model (0: no reference model loaded).
        filter_void_turns: drop trajectories with a void turn from the loss (SimpleTIR).
        recompute_old_logprobs: recompute the rollout policy's logprobs with the training model
            (True) instead of trusting the sampler's (their gap is logged as logprob_mismatch).
            None: True, except with overlap_rollouts, where the batch may come from the previous
            policy and the sampler's logprobs are the behaviour policy's.
        overlap_rollouts: collect the next step's batch while this step updates (one-step
            off-policy, as asynchronous RL systems do); resumes are then exact only up to the
            batch that was in flight.
        max_staleness: drop trajectories that lag the policy being updated by more than this many
            versions (the engine also stops one that falls that far behind mid-episode).
        lora_rank: LoRA rank (0: full fine-tuning).
        lora_alpha: LoRA alpha.
        lora_target_modules: comma-separated module names for LoRA (empty: all linear layers).
        num_envs: episodes collected concurrently.
        rollout_mode: async or lockstep.
        env_workers: thread, process or ray.
        max_batch_size: the generation backend's largest batch.
        generation: transformers (any device) or vllm (CUDA GPU, weights synced after each update).
        device: cpu, cuda, cuda:N or auto.
        dtype: float32, bfloat16 or float16.
        seed: seeds tasks, sampling and initialisation.
        save_every: checkpoint every N steps (0: only at the end).
        resume: continue from the newest checkpoint in output_dir.
        tensorboard: also log to TensorBoard.
    """

    env: str = "AgentRL/TIRMath-v0"
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    env_fn: Callable[[], Any] | None = None
    model: str = "tiny"
    output_dir: str = "runs/train"
    max_steps: int = 20
    max_new_tokens: int = 64
    max_turns: int | None = None
    max_context_tokens: int | None = 4096
    temperature: float = 1.0
    top_p: float = 1.0
    learning_rate: float = 1e-5
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    grad_accum_steps: int = 1
    updates_per_step: int = 1
    clip_low: float | None = None
    clip_high: float | None = None
    dual_clip: float | None = None
    kl_coef: float = 0.0
    filter_void_turns: bool = False
    recompute_old_logprobs: bool | None = None
    overlap_rollouts: bool = False
    max_staleness: int | None = None
    lora_rank: int = 0
    lora_alpha: int = 16
    lora_target_modules: str = ""
    num_envs: int = 16
    rollout_mode: str = "async"
    env_workers: str = "thread"
    max_batch_size: int = 32
    generation: str = "transformers"
    device: str = "cpu"
    dtype: str = "float32"
    seed: int = 0
    save_every: int = 0
    resume: bool = False
    tensorboard: bool = True

    def __post_init__(self) -> None:
        for name in ("max_new_tokens", "grad_accum_steps", "updates_per_step", "num_envs"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.max_steps < 0:
            raise ValueError(f"max_steps must be >= 0, got {self.max_steps}")
        if self.temperature <= 0:
            raise ValueError("temperature must be > 0 for policy-gradient training (logprobs need a distribution)")
        if self.recompute_old_logprobs is None:
            self.recompute_old_logprobs = not self.overlap_rollouts


#: Per-rank counts among the metrics: summed over ranks, not averaged.
_COUNT_METRICS = ("rollout/trajectories", "rollout/failed")


class PolicyRun:
    """The plumbing of one training run, shared by the trainers.

    Holds the trainable policy (LoRA or full), the frozen reference (when ``kl_coef > 0``), the
    policy's optimizer, the generation backend and the rollout engine, the metrics logger and the
    step counter; collects batches, syncs weights, saves and resumes checkpoints. The trainers keep
    only their algorithm.
    """

    def __init__(self, args: TrainArgs) -> None:
        torch = _torch()
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
            max_staleness=args.max_staleness,
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
        )
        self.pad_id = self.backend.tokenizer.pad_token_id or 0
        self.step_index = 0
        self.logger: MetricsLogger | None = None
        #: The model the training forward passes go through: ``self.model`` wrapped in DDP when
        #: distributed (set by :meth:`start`, after a resume has loaded the weights).
        self.policy: Any = self.model
        self._collector: Any = None  # a one-thread pool for overlapped collection
        self._pending: tuple[int, Any] | None = None

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

    def micro_batches(self, rows: int, parts: int) -> list[list[int]]:
        """Row indices split into ``parts`` micro-batches; empty ones are kept when distributed.

        Every rank must run the same number of backward passes per optimizer step (each is a
        collective under DDP), so a rank with fewer rows backs an empty micro-batch with
        :meth:`backward_nothing` rather than skipping it.
        """
        split = [list(range(rows))[i::parts] for i in range(parts)]
        return split if self.dist.enabled else [part for part in split if part]

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
        torch = _torch()
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
        seed = (self.step_seed(step) + 104_729 * self.dist.rank) % 2**31
        self.engine.config = dataclasses.replace(self.rollout_config, sampling_seed=seed)
        return self.engine.run(list(requests))

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
        metric. Gradient-free passes use the unwrapped models: through DDP each forward is a collective.
        """
        torch = _torch()
        from agentrl.train.logprobs import token_logprobs

        temperature = self.args.temperature
        with torch.no_grad():
            recomputed, _ = token_logprobs(
                self.model, batch.input_ids, batch.attention_mask, temperature=temperature, with_entropy=False
            )
            gap = float(((recomputed - batch.old_logprobs).abs() * batch.loss_mask).sum() / max(local_tokens, 1.0))
            old = recomputed if self.args.recompute_old_logprobs else batch.old_logprobs
            reference = None
            if self.reference is not None:
                reference, _ = token_logprobs(
                    self.reference, batch.input_ids, batch.attention_mask, temperature=temperature, with_entropy=False
                )
        return old, reference, gap

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
        self.backend.load_weights(policy_state_dict(self.model))
        self.step_index += 1
        self.engine.policy_version = self.step_index
        merged = distributed.all_reduce_mean_dict(
            {k: float(v) for k, v in metrics.items() if isinstance(v, (int, float))}, self.dist
        )
        for key in _COUNT_METRICS:  # counts add up over ranks; everything else is a mean
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
        path = save_checkpoint(self.run_dir, self.step_index, state)
        distributed.barrier(self.dist)
        return path

    def optimizer_step(self, parameters: Sequence[Any], optimizer: Any, max_grad_norm: float) -> float:
        """Clip the gradients (when ``max_grad_norm > 0``), step, return the norm before clipping."""
        torch = _torch()
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
        if self.logger is not None:
            self.logger.close()
        distributed.destroy(self.dist)


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
        if args.overlap_rollouts and step + 1 < args.max_steps:
            run.prefetch(self.requests(step + 1), step + 1)

        metrics = rollout_metrics(trajectories, len(requests), policy_version=step)
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
