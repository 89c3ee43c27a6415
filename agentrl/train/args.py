"""The arguments every trainer shares: :class:`TrainArgs`, each field documented and a command-line option.

:mod:`agentrl.train.cli` turns the ``Attributes:`` section below into ``agentrl train`` options, so
the command line and the Python API never drift apart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TrainArgs"]


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
        max_images: a VLM keeps at most this many screenshots in its context; an episode that shows more
            goes on in a new context window with older ones replaced by a placeholder (GRPO trains each
            window; None: keep them all). See ``RolloutConfig.max_images``.
        temperature: sampling temperature of the rollouts (the loss uses the same).
        top_p: nucleus sampling mass of the rollouts (1.0 keeps logprobs exact).
        learning_rate: AdamW learning rate of the policy.
        weight_decay: AdamW weight decay.
        max_grad_norm: gradient clipping norm (0: no clipping).
        grad_accum_steps: micro-batches per optimizer step (gradient accumulation), at least.
        max_micro_batch_tokens: a micro-batch holds at most this many padded tokens (rows x its longest
            row); more micro-batches are made when needed (the gradient is the same), so memory stays bounded.
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
        seats: multi-agent envs: who plays each seat, comma-separated in seat order: learner (the
            policy being trained; several learner seats share it), snapshot (a frozen copy of it),
            league (each step an opponent drawn by PFSP from league_players and learner snapshots),
            random, scripted, minimax, best or module:Class (empty: learner in the first seat,
            opponent in the others).
        opponent: multi-agent envs: the player of the seats that seats leaves unnamed.
        snapshot_every: multi-agent envs: copy the policy into the snapshot opponent (with league
            seats: add a snapshot to the league) every N steps (0: only the initial policy).
        team_reward: multi-agent envs: every learner seat gets the mean return of all seats
            (MAGRPO's joint reward) instead of its own.
        alternate_seats: multi-agent envs: rotate the players over the seats from one group to the
            next, so the learner plays first in half the games and second in the other half.
        league_players: multi-agent envs: the built-in players in the league that seats named
            league draw from each step, comma-separated; the first is the Elo anchor, fixed at 1000
            (empty: snapshots only, anchored at the initial policy).
        league_size: multi-agent envs: the most learner snapshots the league keeps (the initial
            policy joins at step 0, a new snapshot every snapshot_every steps; the oldest leaves first).
        pfsp: multi-agent envs: how the league picks each step's opponent from the learner's win
            rate p against each: hard ((1-p)^2, AlphaStar's), even (p(1-p)) or uniform.
        elo_k: multi-agent envs: the K factor of the learner's Elo (logged as elo/learner).
        max_failure_rate: the share of failed rollouts over the run above which its summary warns,
            with the first failure's error (a step in which every rollout fails stops the run).
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
    max_images: int | None = None
    temperature: float = 1.0
    top_p: float = 1.0
    learning_rate: float = 1e-5
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    grad_accum_steps: int = 1
    max_micro_batch_tokens: int = 8192
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
    max_failure_rate: float = 0.1
    seats: str = ""
    opponent: str = "random"
    snapshot_every: int = 0
    team_reward: bool = False
    alternate_seats: bool = False
    league_players: str = "random"
    league_size: int = 8
    pfsp: str = "hard"
    elo_k: float = 16.0

    def __post_init__(self) -> None:
        for name in ("max_new_tokens", "grad_accum_steps", "updates_per_step", "num_envs"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.max_steps < 0:
            raise ValueError(f"max_steps must be >= 0, got {self.max_steps}")
        if self.temperature <= 0:
            raise ValueError("temperature must be > 0 for policy-gradient training (logprobs need a distribution)")
        if not 0.0 <= self.max_failure_rate <= 1.0:
            raise ValueError(f"max_failure_rate must be between 0 and 1, got {self.max_failure_rate}")
        if self.snapshot_every < 0:
            raise ValueError(f"snapshot_every must be >= 0, got {self.snapshot_every}")
        if self.league_size < 0:
            raise ValueError(f"league_size must be >= 0, got {self.league_size}")
        if self.pfsp not in ("hard", "even", "variance", "uniform"):
            raise ValueError(f"pfsp must be hard, even or uniform, got {self.pfsp!r}")
        if self.elo_k <= 0:
            raise ValueError(f"elo_k must be > 0, got {self.elo_k}")
        if self.recompute_old_logprobs is None:
            self.recompute_old_logprobs = not self.overlap_rollouts
