"""The arguments every trainer shares: :class:`TrainArgs`, each field typed and documented in its metadata.

Every field carries its help in ``field(..., metadata={"help": ...})``, as Hugging Face's and TRL's
configs do. :mod:`agentrl.train.cli` builds the ``agentrl train`` options from those fields (type,
default and help), and :func:`document_fields` writes the same help into the class's docstring, so
the command line, ``help(GRPOArgs)`` and the Python API never drift apart.
"""

from __future__ import annotations

import dataclasses
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = ["TrainArgs", "document_fields", "field_help"]

_C = TypeVar("_C", bound=type)


def field_help(cls: type, name: str) -> str:
    """The help of field ``name`` of a dataclass: its own metadata, else that of the nearest base declaring it.

    A subclass that only changes a default (``output_dir: str = "runs/grpo"``) keeps the base's help.

    >>> from agentrl.train.grpo import GRPOArgs
    >>> field_help(GRPOArgs, "output_dir")
    'the run folder (metrics, plot, TensorBoard, checkpoints).'
    """
    for klass in cls.__mro__:
        spec = getattr(klass, "__dataclass_fields__", {}).get(name)
        if spec is not None and spec.metadata.get("help"):
            return str(spec.metadata["help"])
    return ""


def document_fields(cls: _C) -> _C:
    """Append an ``Attributes:`` section, built from the fields' help metadata, to a dataclass's docstring.

    Only the fields the class itself declares are listed (its bases document theirs). Apply it on top
    of ``@dataclass``.
    """
    own = [spec for spec in dataclasses.fields(cls) if spec.name in inspect.get_annotations(cls)]
    lines = []
    for spec in own:
        text = field_help(cls, spec.name)
        if text:
            entry = f"{spec.name}: {text}"
            lines += textwrap.wrap(entry, width=100, initial_indent="    ", subsequent_indent="        ")
    if lines:
        intro = inspect.cleandoc(cls.__doc__ or "")
        cls.__doc__ = intro + "\n\nAttributes:\n" + "\n".join(lines) + "\n"
    return cls


@document_fields
@dataclass
class TrainArgs:
    """What every trainer shares; every field is also a command-line option of ``agentrl train``.

    Each field's help is in its metadata (``dataclasses.fields(TrainArgs)``); the ``Attributes:``
    section below is generated from it.
    """

    env: str = field(default="AgentRL/TIRMath-v0", metadata={"help": "the Gymnasium id of the env to train on."})
    env_kwargs: dict[str, Any] = field(default_factory=dict, metadata={"help": "keyword arguments for ``gym.make``."})
    env_fn: Callable[[], Any] | None = field(
        default=None, metadata={"help": "a callable that builds the env (overrides ``env``; Python API only)."}
    )
    harness: str | None = field(
        default=None,
        metadata={
            "help": (
                "an agent harness, package.module:function, that plays each episode through an OpenAI client "
                "(run_episode(env, client, model)); the rollouts are its calls, recorded token for token at a "
                "recording endpoint (agentrl.rollout.harness). The Python API takes the function itself too."
            )
        },
    )
    model: str = field(
        default="tiny",
        metadata={"help": "a Hugging Face model folder, ``tiny`` (a tiny random model, for tests) or ``smollm2``."},
    )
    output_dir: str = field(
        default="runs/train", metadata={"help": "the run folder (metrics, plot, TensorBoard, checkpoints)."}
    )
    max_steps: int = field(default=20, metadata={"help": "training steps."})
    max_new_tokens: int = field(default=64, metadata={"help": "tokens the policy may sample per turn."})
    max_turns: int | None = field(
        default=None, metadata={"help": "an engine-side cap on turns per episode (None: the env's own budget)."}
    )
    max_context_tokens: int | None = field(
        default=4096, metadata={"help": "episodes end (truncated) before the sequence would exceed this."}
    )
    max_images: int | None = field(
        default=None,
        metadata={
            "help": (
                "a VLM keeps at most this many screenshots in its context; an episode that shows more goes on in a "
                "new context window with older ones replaced by a placeholder (GRPO trains each window; None: keep "
                "them all). See ``RolloutConfig.max_images``."
            )
        },
    )
    temperature: float = field(
        default=1.0, metadata={"help": "sampling temperature of the rollouts (the loss uses the same)."}
    )
    top_p: float = field(
        default=1.0, metadata={"help": "nucleus sampling mass of the rollouts (1.0 keeps logprobs exact)."}
    )
    learning_rate: float = field(default=1e-5, metadata={"help": "AdamW learning rate of the policy."})
    weight_decay: float = field(default=0.0, metadata={"help": "AdamW weight decay."})
    max_grad_norm: float = field(default=1.0, metadata={"help": "gradient clipping norm (0: no clipping)."})
    grad_accum_steps: int = field(
        default=1, metadata={"help": "micro-batches per optimizer step (gradient accumulation), at least."}
    )
    max_micro_batch_tokens: int = field(
        default=8192,
        metadata={
            "help": (
                "a micro-batch holds at most this many padded tokens (rows x its longest row); more micro-batches "
                "are made when needed (the gradient is the same), so memory stays bounded."
            )
        },
    )
    updates_per_step: int = field(
        default=1, metadata={"help": "optimizer steps over each collected batch (1: on-policy)."}
    )
    clip_low: float | None = field(
        default=None, metadata={"help": "ratio epsilon below 1 (None: the loss type's default)."}
    )
    clip_high: float | None = field(
        default=None, metadata={"help": "ratio epsilon above 1 (None: the loss type's default; clip-higher is 0.28)."}
    )
    dual_clip: float | None = field(
        default=None, metadata={"help": "dual-clip bound for negative advantages (None: off)."}
    )
    kl_coef: float = field(
        default=0.0, metadata={"help": "weight of the KL to the frozen initial model (0: no reference model loaded)."}
    )
    filter_void_turns: bool = field(
        default=False, metadata={"help": "drop trajectories with a void turn from the loss (SimpleTIR)."}
    )
    recompute_old_logprobs: bool | None = field(
        default=None,
        metadata={
            "help": (
                "recompute the rollout policy's logprobs with the training model (True) instead of trusting the "
                "sampler's (their gap is logged as logprob_mismatch). None: True, except with overlap_rollouts, "
                "where the batch may come from the previous policy and the sampler's logprobs are the behaviour "
                "policy's."
            )
        },
    )
    overlap_rollouts: bool = field(
        default=False,
        metadata={
            "help": (
                "collect the next step's batch while this step updates (one-step off-policy, as asynchronous RL "
                "systems do); resumes are then exact only up to the batch that was in flight."
            )
        },
    )
    max_staleness: int | None = field(
        default=None,
        metadata={
            "help": (
                "drop trajectories that lag the policy being updated by more than this many versions (the engine "
                "also stops one that falls that far behind mid-episode)."
            )
        },
    )
    lora_rank: int = field(default=0, metadata={"help": "LoRA rank (0: full fine-tuning)."})
    lora_alpha: int = field(default=16, metadata={"help": "LoRA alpha."})
    lora_target_modules: str = field(
        default="", metadata={"help": "comma-separated module names for LoRA (empty: all linear layers)."}
    )
    num_envs: int = field(default=16, metadata={"help": "episodes collected concurrently."})
    rollout_mode: str = field(default="async", metadata={"help": "async or lockstep."})
    env_workers: str = field(default="thread", metadata={"help": "thread, process or ray."})
    max_batch_size: int = field(default=32, metadata={"help": "the generation backend's largest batch."})
    generation: str = field(
        default="transformers",
        metadata={"help": "transformers (any device) or vllm (CUDA GPU, weights synced after each update)."},
    )
    device: str = field(default="cpu", metadata={"help": "cpu, cuda, cuda:N or auto."})
    dtype: str = field(default="float32", metadata={"help": "float32, bfloat16 or float16."})
    seed: int = field(default=0, metadata={"help": "seeds tasks, sampling and initialisation."})
    save_every: int = field(default=0, metadata={"help": "checkpoint every N steps (0: only at the end)."})
    resume: bool = field(default=False, metadata={"help": "continue from the newest checkpoint in output_dir."})
    tensorboard: bool = field(default=True, metadata={"help": "also log to TensorBoard."})
    max_failure_rate: float = field(
        default=0.1,
        metadata={
            "help": (
                "the share of failed rollouts over the run above which its summary warns, with the first failure's "
                "error (a step in which every rollout fails stops the run)."
            )
        },
    )
    seats: str = field(
        default="",
        metadata={
            "help": (
                "multi-agent envs: who plays each seat, comma-separated in seat order: learner (the policy being "
                "trained; several learner seats share it), snapshot (a frozen copy of it), league (each step an "
                "opponent drawn by PFSP from league_players and learner snapshots), random, scripted, minimax, best "
                "or module:Class (empty: learner in the first seat, opponent in the others)."
            )
        },
    )
    opponent: str = field(
        default="random", metadata={"help": "multi-agent envs: the player of the seats that seats leaves unnamed."}
    )
    snapshot_every: int = field(
        default=0,
        metadata={
            "help": (
                "multi-agent envs: copy the policy into the snapshot opponent (with league seats: add a snapshot to "
                "the league) every N steps (0: only the initial policy)."
            )
        },
    )
    team_reward: bool = field(
        default=False,
        metadata={
            "help": (
                "multi-agent envs: every learner seat gets the mean return of all seats (MAGRPO's joint reward) "
                "instead of its own."
            )
        },
    )
    alternate_seats: bool = field(
        default=False,
        metadata={
            "help": (
                "multi-agent envs: rotate the players over the seats from one group to the next, so the learner "
                "plays first in half the games and second in the other half."
            )
        },
    )
    league_players: str = field(
        default="random",
        metadata={
            "help": (
                "multi-agent envs: the built-in players in the league that seats named league draw from each step, "
                "comma-separated; the first is the Elo anchor, fixed at 1000 (empty: snapshots only, anchored at "
                "the initial policy)."
            )
        },
    )
    league_size: int = field(
        default=8,
        metadata={
            "help": (
                "multi-agent envs: the most learner snapshots the league keeps (the initial policy joins at step 0, "
                "a new snapshot every snapshot_every steps; the oldest leaves first)."
            )
        },
    )
    pfsp: str = field(
        default="hard",
        metadata={
            "help": (
                "multi-agent envs: how the league picks each step's opponent from the learner's win rate p against "
                "each: hard ((1-p)^2, AlphaStar's), even (p(1-p)) or uniform."
            )
        },
    )
    elo_k: float = field(
        default=16.0, metadata={"help": "multi-agent envs: the K factor of the learner's Elo (logged as elo/learner)."}
    )

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
