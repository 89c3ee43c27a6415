"""Our GRPO against TRL's ``GRPOTrainer``: the same update to 1e-5, then paired step timings.

``python benchmarks/trl_compare.py [--repeats N] [--json PATH]`` runs both parts and prints a table.

**What is held equal.** Both sides train the same tiny random chat model
(:func:`~agentrl.llm.tiny.build_tiny_model`, float32, CPU) on the same prompt (the
single user message :attr:`~agentrl.envs.toy.LetterEnv.instruction`, no system prompt, chat
template with the generation prompt), with the same reward
(:func:`~agentrl.envs.toy.letter_reward` of the completion decoded without special tokens), the
same batch (2 prompts x G=4 completions), completion budget (16 tokens), sampling (temperature 1,
no top-k/top-p), clip epsilons (0.2, and 0.28 above for ``dapo``), no KL term (TRL ``beta=0``) and
loss type. Advantages are scaled by the group's standard deviation for ``grpo``/``dapo`` and not at
all for ``dr_grpo`` (TRL ``scale_rewards="none"``), as the Dr. GRPO paper prescribes.

**Part 1, parity** (:func:`parity_check`). One fixed rollout: 8 completions sampled once from the
model (one completion per group replaced by a run of ``a`` so that every group has reward variance
and a non-zero gradient), then frozen token ids. TRL's side is its real code: a ``GRPOTrainer`` whose
``_generate_single_turn`` is patched to return the frozen completions, so its own
``_generate_and_score_completions`` tokenises the prompt, decodes, calls the reward function and
computes the advantages and ``num_items_in_batch``; then its ``_compute_loss(model, inputs)`` runs
and is backpropagated. Our side: :func:`~agentrl.train.advantages.group_advantages`,
:func:`~agentrl.train.logprobs.token_logprobs` on the right-padded prompt + completion rows and
:func:`~agentrl.train.losses.policy_loss`. Two cases per loss type: *on-policy* (the old logprobs
are the current model's, so every ratio is 1; TRL takes its ``old_per_token_logps is None`` path)
and *off-policy* (old logprobs computed, then every weight perturbed by seeded Gaussian noise, so
ratios leave ``[1 - eps, 1 + eps]`` and clipping matters; both sides get the same old logprobs).
Compared: the loss, the total gradient L2 norm, the largest gradient element difference, the
advantages and the per-token logprobs. A case passes when ``|ours - TRL| <= 1e-5 * max(1, |TRL|)``
for both loss and gradient norm (absolute below 1, relative above).

**Part 2, paired timings** (:func:`time_steps`). TRL runs its own ``trainer.train()`` for
``warmup + repeats`` steps; a ``TrainerCallback`` times each step from ``on_step_begin`` to
``on_step_end`` (generation, rewards, advantages, forward, backward, grad clipping, optimizer step;
not the data loader's fetch of 8 prompt dicts, not logging, which is off). Generation is the time
inside TRL's ``_generate_and_score_completions`` (wrapped on the instance: sampling, decoding,
rewards, advantages); update is the step minus that. Our step runs from the same callback, before
TRL's step on odd steps and after it on even ones (so neither side always runs first, ABAB...),
and is timed by the wall clock around ``our_step()``, which also reports its own generate / update
split. Warm-up steps are run and dropped. Reported: the median of each side, and ``ratio =
median(ours) / median(TRL)`` with a 95% percentile-bootstrap interval over the pairs (resampling
step pairs, recomputing the ratio of medians), plus the median of the per-pair ratios.

**Reading the ratio.** Below 1: our step is faster; above 1: slower. The interval says how sure: an
upper bound below 1 means faster beyond the step-to-step noise. With few repeats (5) the bootstrap
interval is coarse; use ``--repeats 20`` or more for a claim. The figures are for a 0.2M-parameter
model on CPU, where fixed per-step overheads dominate; they say nothing about GPU throughput.

TRL settings that differ from its defaults, to make the comparison like for like:
``gradient_checkpointing=False`` (GRPOConfig defaults to True, which recomputes activations),
``bf16=False`` (GRPOConfig defaults to bf16 on), ``lr_scheduler_type="constant"``,
``logging_strategy="no"``, ``save_strategy="no"``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

__all__ = [
    "LOSS_TYPES",
    "fixed_rollout",
    "format_report",
    "main",
    "make_our_step",
    "make_trl_trainer",
    "paired_ratio",
    "parity_check",
    "time_steps",
]

#: The loss types both sides implement.
LOSS_TYPES = ("grpo", "dr_grpo", "dapo")
GROUP_SIZE = 4
NUM_PROMPTS = 2
MAX_COMPLETION_LENGTH = 16
TOLERANCE = 1e-5


# -- shared setup ----------------------------------------------------------------------------
def _epsilons(loss_type: str) -> tuple[float, float]:
    """(low, high) clip epsilons: DAPO's clip-higher for ``dapo``, symmetric 0.2 otherwise."""
    return (0.2, 0.28) if loss_type == "dapo" else (0.2, 0.2)


def _scale(loss_type: str) -> str:
    """Advantage scaling: none for Dr. GRPO, the group's std otherwise."""
    return "none" if loss_type == "dr_grpo" else "group"


def _model_dir(model_dir: str | Path | None, workdir: Path) -> Path:
    from agentrl.llm.tiny import build_tiny_model

    return Path(model_dir) if model_dir is not None else build_tiny_model(workdir / "tiny-qwen2")


def _load_model(model_dir: Path) -> Any:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    model.train()
    return model


def _messages() -> list[dict[str, str]]:
    from agentrl.envs.toy import LetterEnv

    return [{"role": "user", "content": LetterEnv().instruction}]


def letter_reward_func(completions: Sequence[Any], **kwargs: Any) -> list[float]:
    """TRL reward function: :func:`~agentrl.envs.toy.letter_reward` of each (conversational) completion."""
    from agentrl.envs.toy import letter_reward

    out = []
    for completion in completions:
        text = completion[-1]["content"] if isinstance(completion, list) else str(completion)
        out.append(letter_reward(text))
    return out


def grpo_config(output_dir: Any, loss_type: str, *, max_completion_length: int, learning_rate: float,
                max_steps: int, seed: int, **extra: Any) -> Any:
    """TRL's ``GRPOConfig`` for the compared setting (CPU, float32, no KL, no logging); ``extra`` adds options."""
    from trl import GRPOConfig

    low, high = _epsilons(loss_type)
    return GRPOConfig(
        output_dir=str(output_dir),
        loss_type=loss_type,
        scale_rewards=_scale(loss_type),
        beta=0.0,
        epsilon=low,
        epsilon_high=high,
        num_generations=GROUP_SIZE,
        per_device_train_batch_size=NUM_PROMPTS * GROUP_SIZE,
        gradient_accumulation_steps=1,
        max_completion_length=max_completion_length,
        temperature=1.0,
        top_p=1.0,
        top_k=0,
        learning_rate=learning_rate,
        lr_scheduler_type="constant",
        max_steps=max_steps,
        seed=seed,
        report_to="none",
        use_cpu=True,
        bf16=False,
        fp16=False,
        gradient_checkpointing=False,
        logging_strategy="no",
        save_strategy="no",
        disable_tqdm=True,
        **extra,
    )


def make_trl_trainer(
    model: Any,
    tokenizer: Any,
    loss_type: str,
    *,
    output_dir: str | Path,
    max_completion_length: int = MAX_COMPLETION_LENGTH,
    learning_rate: float = 1e-5,
    max_steps: int = 1,
    seed: int = 0,
    callbacks: Sequence[Any] = (),
) -> Any:
    """A TRL ``GRPOTrainer`` on ``model`` with the compared configuration (CPU, float32, no KL).

    The dataset holds ``NUM_PROMPTS * max_steps`` copies of the prompt, so one epoch covers every
    step (no epoch turnover inside the timed loop).
    """
    from datasets import Dataset
    from trl import GRPOTrainer

    config = grpo_config(
        output_dir, loss_type, max_completion_length=max_completion_length, learning_rate=learning_rate,
        max_steps=max_steps, seed=seed,
    )
    dataset = Dataset.from_dict({"prompt": [_messages()] * (NUM_PROMPTS * max(1, max_steps))})
    return GRPOTrainer(
        model=model,
        reward_funcs=letter_reward_func,
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=list(callbacks),
    )


# -- part 1: parity --------------------------------------------------------------------------
def fixed_rollout(
    model: Any, tokenizer: Any, *, max_completion_length: int = MAX_COMPLETION_LENGTH, seed: int = 0
) -> dict[str, Any]:
    """Sample ``NUM_PROMPTS x GROUP_SIZE`` completions once and freeze them (token ids and rewards).

    Sampling is TRL's: temperature 1, no top-k/top-p, cut after the first end-of-turn token. The
    first completion of each group is then replaced by a run of ``a`` (ending with end-of-turn) so
    that every group has reward variance, hence non-zero advantages and gradients.

    Returns:
        ``prompt_ids`` (one list, the same for every row), ``completions`` (lists of ids, row-major
        by group), ``rewards`` and ``group_ids``.
    """
    import torch

    from agentrl.envs.toy import letter_reward

    prompt_ids = tokenizer.apply_chat_template(
        _messages(), add_generation_prompt=True, tokenize=True, return_dict=True
    )["input_ids"]
    prompt_ids = [int(t) for t in (prompt_ids[0] if isinstance(prompt_ids[0], list) else prompt_ids)]
    eos_ids = model.generation_config.eos_token_id
    eos_ids = [eos_ids] if isinstance(eos_ids, int) else list(eos_ids)
    rows = NUM_PROMPTS * GROUP_SIZE
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        out = model.generate(
            input_ids=torch.tensor([prompt_ids] * rows),
            attention_mask=torch.ones(rows, len(prompt_ids), dtype=torch.long),
            do_sample=True,
            temperature=1.0,
            top_k=0,
            top_p=1.0,
            max_new_tokens=max_completion_length,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=eos_ids,
        )
    completions: list[list[int]] = []
    for row in out[:, len(prompt_ids) :].tolist():
        cut = next((i for i, t in enumerate(row) if t in eos_ids), None)
        completions.append(row[: cut + 1] if cut is not None else row)
    for group in range(NUM_PROMPTS):
        planted = tokenizer.encode("a" * (6 + 5 * group), add_special_tokens=False)[: max_completion_length - 1]
        completions[group * GROUP_SIZE] = [*planted, eos_ids[0]]
    texts = tokenizer.batch_decode(completions, skip_special_tokens=True)
    return {
        "prompt_ids": prompt_ids,
        "completions": completions,
        "rewards": [letter_reward(t) for t in texts],
        "group_ids": [i // GROUP_SIZE for i in range(rows)],
    }


def _our_tensors(rollout: dict[str, Any], pad_id: int) -> dict[str, Any]:
    """Right-padded (B, T) rows of prompt + completion, and the completion mask."""
    import torch

    prompt = rollout["prompt_ids"]
    rows = [prompt + c for c in rollout["completions"]]
    width = max(len(r) for r in rows)
    input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    attention = torch.zeros_like(input_ids)
    mask = torch.zeros(len(rows), width)
    for i, row in enumerate(rows):
        input_ids[i, : len(row)] = torch.tensor(row)
        attention[i, : len(row)] = 1
        mask[i, len(prompt) : len(row)] = 1.0
    return {"input_ids": input_ids, "attention_mask": attention, "mask": mask}


def _grads(model: Any) -> list[Any]:
    return [p.grad.detach().clone() for p in model.parameters() if p.grad is not None]


def _norm(grads: Sequence[Any]) -> float:
    import torch

    return float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])))


def _perturb(model: Any, scale: float, seed: int) -> None:
    import torch

    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * scale)


def _close(ours: float, theirs: float, tol: float) -> bool:
    return abs(ours - theirs) <= tol * max(1.0, abs(theirs))


def _parity_case(
    model_dir: Path,
    tokenizer: Any,
    rollout: dict[str, Any],
    loss_type: str,
    *,
    off_policy: bool,
    workdir: Path,
    perturb_scale: float,
    tol: float,
) -> dict[str, Any]:
    import torch

    from agentrl.train.advantages import group_advantages
    from agentrl.train.logprobs import token_logprobs
    from agentrl.train.losses import LossConfig, policy_loss

    model = _load_model(model_dir)
    trainer = make_trl_trainer(model, tokenizer, loss_type, output_dir=workdir / f"trl-{loss_type}")
    trainer.current_gradient_accumulation_steps = 1  # set by Trainer's loop; _compute_loss reads it
    prompt_len = len(rollout["prompt_ids"])
    batch = _our_tensors(rollout, tokenizer.pad_token_id)
    mask = batch["mask"]

    old = None
    if off_policy:
        with torch.no_grad():
            old, _ = token_logprobs(model, batch["input_ids"], batch["attention_mask"], with_entropy=False)
        _perturb(model, perturb_scale, seed=1234)

    # TRL: its own inputs pipeline on the frozen completions, then its loss.
    seen_prompts: list[list[int]] = []

    def frozen_generate(prompt_ids: Any, *args: Any, **kwargs: Any) -> tuple[list[list[int]], None]:
        seen_prompts.extend([list(map(int, p)) for p in prompt_ids])
        return [list(c) for c in rollout["completions"]], None

    trainer._generate_single_turn = frozen_generate
    inputs = trainer._generate_and_score_completions([{"prompt": _messages()} for _ in rollout["completions"]])
    if any(p != rollout["prompt_ids"] for p in seen_prompts):
        raise AssertionError("TRL tokenised the prompt differently from ours")
    if off_policy:
        assert old is not None
        inputs["old_per_token_logps"] = old[:, prompt_len:] * inputs["completion_mask"]
    model.zero_grad(set_to_none=True)
    trl_loss = trainer._compute_loss(model, inputs)
    trl_loss.backward()
    trl_grads = _grads(model)
    with torch.no_grad():
        trl_logps, _, _ = trainer._get_per_token_logps_and_entropies(
            model,
            torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], 1),
            torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], 1),
            inputs["completion_ids"].size(1),
        )

    # Ours.
    rewards = torch.tensor(rollout["rewards"], dtype=torch.float32)
    adv = group_advantages(rewards, rollout["group_ids"], scale=_scale(loss_type))
    low, high = _epsilons(loss_type)
    config = LossConfig(loss_type, clip_low=low, clip_high=high, max_completion_length=MAX_COMPLETION_LENGTH)
    model.zero_grad(set_to_none=True)
    logps, _ = token_logprobs(model, batch["input_ids"], batch["attention_mask"], with_entropy=False)
    old_ours = logps.detach() if old is None else old
    our_loss, stats = policy_loss(logps, old_ours, adv[:, None].expand_as(logps), mask, config)
    our_loss.backward()
    our_grads = _grads(model)

    width = inputs["completion_ids"].size(1)
    ours_completion = logps.detach()[:, prompt_len : prompt_len + width]
    cmask = inputs["completion_mask"].bool()
    if ours_completion.shape[1] < width:  # only if TRL padded the completions further than we did
        ours_completion = torch.nn.functional.pad(ours_completion, (0, width - ours_completion.shape[1]))
    row = {
        "loss_type": loss_type,
        "case": "off_policy" if off_policy else "on_policy",
        "trl_loss": float(trl_loss.detach()),
        "our_loss": float(our_loss.detach()),
        "trl_grad_norm": _norm(trl_grads),
        "our_grad_norm": _norm(our_grads),
        "max_grad_diff": max(float((a - b).abs().max()) for a, b in zip(trl_grads, our_grads, strict=True)),
        "max_logprob_diff": float((trl_logps - ours_completion)[cmask].abs().max()),
        "max_advantage_diff": float((inputs["advantages"].float() - adv).abs().max()),
        "num_items_in_batch": float(inputs["num_items_in_batch"]),
        "clip_frac": float(stats["clip_low_frac"] + stats["clip_high_frac"]),
    }
    row["loss_diff"] = abs(row["our_loss"] - row["trl_loss"])
    row["grad_norm_diff"] = abs(row["our_grad_norm"] - row["trl_grad_norm"])
    row["ok"] = _close(row["our_loss"], row["trl_loss"], tol) and _close(
        row["our_grad_norm"], row["trl_grad_norm"], tol
    )
    return row


def parity_check(
    loss_types: Sequence[str] = LOSS_TYPES,
    model_dir: str | Path | None = None,
    *,
    off_policy: bool = True,
    perturb_scale: float = 0.005,
    seed: int = 0,
    tol: float = TOLERANCE,
) -> list[dict[str, Any]]:
    """One update from the same frozen rollout, TRL's ``_compute_loss`` against our ``policy_loss``.

    Args:
        loss_types: among :data:`LOSS_TYPES`.
        model_dir: a model folder (default: a tiny random Qwen2-style model built in a temp folder).
        off_policy: also run the perturbed-weights case (ratios != 1, clipping active).
        perturb_scale: the std of the Gaussian noise added to every weight for that case.
        seed: seeds the sampling of the frozen rollout.
        tol: the tolerance, ``|ours - TRL| <= tol * max(1, |TRL|)``.

    Returns:
        One dict per (loss type, case) with ``loss_type``, ``case`` (``on_policy`` / ``off_policy``),
        ``trl_loss``, ``our_loss``, ``trl_grad_norm``, ``our_grad_norm``, the differences
        (``loss_diff``, ``grad_norm_diff``, ``max_grad_diff`` elementwise, ``max_logprob_diff``,
        ``max_advantage_diff``), ``clip_frac`` (share of completion tokens clipped) and ``ok``.
    """
    from transformers import AutoTokenizer

    unknown = [t for t in loss_types if t not in LOSS_TYPES]
    if unknown:
        raise ValueError(f"unknown loss types {unknown}; choose from {LOSS_TYPES}")
    with tempfile.TemporaryDirectory(prefix="trl-compare-") as tmp:
        workdir = Path(tmp)
        path = _model_dir(model_dir, workdir)
        tokenizer = AutoTokenizer.from_pretrained(path)
        rollout = fixed_rollout(_load_model(path), tokenizer, seed=seed)
        results = []
        for loss_type in loss_types:
            for off in (False, True) if off_policy else (False,):
                results.append(
                    _parity_case(
                        path,
                        tokenizer,
                        rollout,
                        loss_type,
                        off_policy=off,
                        workdir=workdir,
                        perturb_scale=perturb_scale,
                        tol=tol,
                    )
                )
    return results


# -- part 2: paired timings ------------------------------------------------------------------
def paired_ratio(
    ours: Sequence[float], theirs: Sequence[float], *, confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> dict[str, float]:
    """``median(ours) / median(theirs)`` with a percentile-bootstrap interval over the pairs.

    Each resample draws pair indices with replacement and recomputes the ratio of medians.
    ``pair_median`` is the median of the per-pair ratios ``ours[i] / theirs[i]``.

    Example:
        >>> r = paired_ratio([1.0, 1.0, 1.0], [2.0, 2.0, 2.0])
        >>> r["ratio"], r["low"], r["high"], r["pair_median"]
        (0.5, 0.5, 0.5, 0.5)
    """
    if len(ours) != len(theirs) or not ours:
        raise ValueError("need the same positive number of timings on both sides")
    rng = random.Random(seed)
    n = len(ours)
    ratios = []
    for _ in range(resamples):
        index = [rng.randrange(n) for _ in range(n)]
        ratios.append(statistics.median(ours[i] for i in index) / statistics.median(theirs[i] for i in index))
    ratios.sort()
    tail = (1 - confidence) / 2
    low = ratios[min(len(ratios) - 1, math.floor(tail * len(ratios)))]
    high = ratios[min(len(ratios) - 1, math.ceil((1 - tail) * len(ratios)) - 1)]
    return {
        "ratio": statistics.median(ours) / statistics.median(theirs),
        "low": low,
        "high": high,
        "pair_median": statistics.median(o / t for o, t in zip(ours, theirs, strict=True)),
        "confidence": confidence,
    }


def make_our_step(
    model_dir: str | Path,
    loss_type: str,
    *,
    output_dir: str | Path,
    learning_rate: float = 1e-5,
    max_completion_length: int = MAX_COMPLETION_LENGTH,
    seed: int = 0,
) -> tuple[Callable[[], dict[str, float]], Callable[[], None]]:
    """Our trainer (:mod:`agentrl.train.grpo`) on the compared configuration: ``(step, close)``.

    ``step()`` runs one full training step and returns its metrics (``time/generate_s``,
    ``time/update_s``, ``time/step_s`` among them).

    Raises:
        ImportError: :mod:`agentrl.train.grpo` is not available.
    """
    from agentrl.envs.toy import LetterEnv
    from agentrl.train.grpo import GRPOArgs, GRPOTrainer

    low, high = _epsilons(loss_type)
    args = GRPOArgs(
        env_fn=LetterEnv,
        model=str(model_dir),
        output_dir=str(output_dir),
        loss_type=loss_type,
        group_size=GROUP_SIZE,
        prompts_per_step=NUM_PROMPTS,
        max_new_tokens=max_completion_length,
        temperature=1.0,
        top_p=1.0,
        learning_rate=learning_rate,
        max_grad_norm=1.0,  # TRL's (Trainer's) default
        clip_low=low,
        clip_high=high,
        kl_coef=0.0,
        scale_rewards=_scale(loss_type),
        dynamic_sampling=False,  # TRL has no dynamic sampling: update on the same 8 rows
        device="cpu",
        dtype="float32",
        seed=seed,
        tensorboard=False,  # TRL runs with report_to="none"
    )
    trainer = GRPOTrainer(args)
    return trainer.step, trainer.close


class _TRLTimer:
    """A ``TrainerCallback`` that times TRL's steps and runs ours in between (see the module docstring)."""

    def __init__(self, trainer: Any, our_step: Callable[[], dict[str, float]] | None, warmup: int) -> None:
        self.trainer, self.our_step, self.warmup = trainer, our_step, warmup
        self.trl: list[dict[str, float]] = []
        self.ours: list[dict[str, float]] = []
        self._gen = 0.0
        self._start = 0.0
        self._index = 0
        _time_generation(self, trainer)

    def _run_ours(self) -> None:
        if self.our_step is None:
            return
        start = time.perf_counter()
        metrics = self.our_step()
        wall = time.perf_counter() - start
        if self._index >= self.warmup:
            self.ours.append(
                {
                    "step_s": wall,
                    "generate_s": float(metrics.get("time/generate_s", math.nan)),
                    "update_s": float(metrics.get("time/update_s", math.nan)),
                    "reported_step_s": float(metrics.get("time/step_s", math.nan)),
                    "completion_tokens": float(metrics.get("length/policy_tokens", math.nan)),
                    "reward": float(metrics.get("reward/mean", math.nan)),
                }
            )

    # TrainerCallback protocol (duck-typed; transformers calls every on_* it finds).
    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Run our step first on odd steps, then start TRL's clock."""
        if self._index % 2 == 1:
            self._run_ours()
        self._gen = 0.0
        self._start = time.perf_counter()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Stop TRL's clock, then run our step on even steps."""
        step = time.perf_counter() - self._start
        if self._index >= self.warmup:
            metrics = self.trainer._metrics["train"]  # TRL's per-step metrics (logging is off)
            self.trl.append(
                {
                    "step_s": step,
                    "generate_s": self._gen,
                    "update_s": step - self._gen,
                    "completion_tokens": float(metrics["completions/mean_length"][-1]),
                    "reward": float(metrics["reward"][-1]),
                }
            )
        if self._index % 2 == 0:
            self._run_ours()
        self._index += 1


def _time_generation(timer: Any, trainer: Any) -> None:
    """Add the seconds of TRL's generation (its ``_generate_and_score_completions``) to ``timer._gen``."""
    inner = trainer._generate_and_score_completions

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            timer._gen += time.perf_counter() - start

    trainer._generate_and_score_completions = timed


def _callback(timer: Any) -> Any:
    """A ``TrainerCallback`` handing TRL's step begin and end to ``timer`` (a :class:`_TRLTimer` or alike)."""
    from transformers import TrainerCallback

    class _Callback(TrainerCallback):
        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            timer.on_step_begin(args, state, control)

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            timer.on_step_end(args, state, control)

    return _Callback()


def time_steps(
    repeats: int = 5,
    *,
    loss_type: str = "dapo",
    warmup: int = 1,
    model_dir: str | Path | None = None,
    learning_rate: float = 1e-5,
    seed: int = 0,
    our_step: Callable[[], dict[str, float]] | None = None,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Alternate ``warmup + repeats`` full TRL GRPO steps with ours; medians and ours/TRL ratios.

    Args:
        repeats: timed step pairs (after ``warmup`` untimed ones).
        loss_type: among :data:`LOSS_TYPES`.
        warmup: step pairs run first and dropped.
        model_dir: the model folder both sides start from (default: a fresh tiny model).
        learning_rate: both sides' learning rate (constant).
        seed: both sides' seed.
        our_step: a callable running one of our full steps and returning its metrics (``time/generate_s``,
            ``time/update_s``); default: :func:`make_our_step`, or TRL alone when
            :mod:`agentrl.train.grpo` is missing (then ``ours`` is empty and ``ratios`` is ``{}``).
        confidence: of the bootstrap intervals.

    Returns:
        ``{"config": ..., "trl": {"step_s": [...], ...}, "ours": {...}, "median": {"trl": {...},
        "ours": {...}}, "ratios": {"step_s": {"ratio", "low", "high", "pair_median"}, ...}, "notes": [...]}``.
    """
    import torch
    from transformers import AutoTokenizer, PrinterCallback

    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="trl-compare-") as tmp, ExitStack() as stack:
        workdir = Path(tmp)
        path = _model_dir(model_dir, workdir)
        if our_step is None:
            try:
                step_fn, close = make_our_step(
                    path, loss_type, output_dir=workdir / "ours", learning_rate=learning_rate, seed=seed
                )
                stack.callback(close)
                our_step = step_fn
            except ImportError as exc:
                notes.append(f"our trainer unavailable ({exc}); TRL timed alone")
        tokenizer = AutoTokenizer.from_pretrained(path)
        total = warmup + repeats
        torch.manual_seed(seed)
        trainer = make_trl_trainer(
            _load_model(path),
            tokenizer,
            loss_type,
            output_dir=workdir / "trl",
            learning_rate=learning_rate,
            max_steps=total,
            seed=seed,
        )
        timer = _TRLTimer(trainer, our_step, warmup)
        trainer.add_callback(_callback(timer))
        trainer.remove_callback(PrinterCallback)  # it prints the end-of-training summary
        trainer.train()
    keys = ("step_s", "generate_s", "update_s")
    trl = {k: [r[k] for r in timer.trl] for k in (*keys, "completion_tokens", "reward")}
    extra = ("reported_step_s", "completion_tokens", "reward")
    ours = {k: [r[k] for r in timer.ours] for k in (*keys, *extra)} if timer.ours else {}
    report: dict[str, Any] = {
        "config": {
            "loss_type": loss_type,
            "repeats": repeats,
            "warmup": warmup,
            "prompts": NUM_PROMPTS,
            "group_size": GROUP_SIZE,
            "max_completion_length": MAX_COMPLETION_LENGTH,
            "learning_rate": learning_rate,
            "dtype": "float32",
            "device": "cpu",
            "torch_threads": torch.get_num_threads(),
        },
        "trl": trl,
        "ours": ours,
        "median": {
            "trl": {k: statistics.median(v) for k, v in trl.items()},
            "ours": {k: statistics.median(v) for k, v in ours.items()},
        },
        "ratios": {},
        "notes": notes,
    }
    if ours:
        for k in keys:
            if not any(math.isnan(x) for x in ours[k]):
                report["ratios"][k] = paired_ratio(ours[k], trl[k], confidence=confidence, seed=seed)
    return report


# -- report and CLI --------------------------------------------------------------------------
def format_report(parity: Sequence[dict[str, Any]] | None, timing: dict[str, Any] | None) -> str:
    """Both parts as plain-text tables."""
    lines: list[str] = []
    if parity:
        lines.append("Parity: one update from a frozen rollout (float32, CPU); ok = |diff| <= 1e-5 * max(1, |TRL|)")
        lines.append(
            f"{'loss':8} {'case':10} {'TRL loss':>13} {'our loss':>13} {'|diff|':>9} "
            f"{'TRL |grad|':>11} {'our |grad|':>11} {'|diff|':>9} {'max dgrad':>9} {'clip':>5} ok"
        )
        for r in parity:
            lines.append(
                f"{r['loss_type']:8} {r['case']:10} {r['trl_loss']:13.8f} {r['our_loss']:13.8f} {r['loss_diff']:9.1e} "
                f"{r['trl_grad_norm']:11.7f} {r['our_grad_norm']:11.7f} {r['grad_norm_diff']:9.1e} "
                f"{r['max_grad_diff']:9.1e} {r['clip_frac']:5.2f} {'yes' if r['ok'] else 'NO'}"
            )
    if timing:
        if lines:
            lines.append("")
        cfg = timing["config"]
        lines.append(
            f"Paired timings: {cfg['loss_type']}, {cfg['prompts']} prompts x G={cfg['group_size']}, "
            f"{cfg['max_completion_length']} tokens, {cfg['repeats']} pairs after {cfg['warmup']} warm-up, "
            f"{cfg['torch_threads']} torch threads"
        )
        lines.append(
            f"{'part':10} {'TRL median':>11} {'our median':>11} {'ours/TRL':>9} {'95% interval':>17} {'pairs':>7}"
        )
        for k, label in (("step_s", "full step"), ("generate_s", "generation"), ("update_s", "update")):
            trl = timing["median"]["trl"].get(k, math.nan)
            ours = timing["median"]["ours"].get(k, math.nan)
            ratio = timing["ratios"].get(k)
            if ratio:
                tail = f"{ratio['ratio']:9.3f} [{ratio['low']:6.3f}, {ratio['high']:6.3f}] {ratio['pair_median']:7.3f}"
            else:
                tail = f"{'-':>9} {'-':>17} {'-':>7}"
            lines.append(f"{label:10} {trl * 1e3:9.1f}ms {ours * 1e3:9.1f}ms {tail}")
        med = timing["median"]
        for k, label in (("completion_tokens", "completion tokens per row"), ("reward", "mean reward")):
            trl, ours = med["trl"].get(k, math.nan), med["ours"].get(k, math.nan)
            lines.append(f"median {label}: TRL {trl:.3f}, ours {ours:.3f}")
        lines.extend(f"note: {n}" for n in timing.get("notes", []))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python benchmarks/trl_compare.py``: parity, then paired timings; exit 1 if parity fails."""
    parser = argparse.ArgumentParser(prog="python benchmarks/trl_compare.py", description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed step pairs (default 5)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed step pairs first (default 1)")
    parser.add_argument("--loss-type", default="dapo", choices=LOSS_TYPES, help="loss type of the timed runs")
    parser.add_argument("--model", default=None, help="model folder (default: a tiny random model)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--skip-parity", action="store_true")
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # the per-load "Loading weights" bars drown the table
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    parity = None if args.skip_parity else parity_check(model_dir=args.model)
    timing = (
        None
        if args.skip_timing
        else time_steps(args.repeats, loss_type=args.loss_type, warmup=args.warmup, model_dir=args.model)
    )
    print(format_report(parity, timing))
    if args.json:
        Path(args.json).write_text(json.dumps({"parity": parity, "timing": timing}, indent=2))
    return 0 if parity is None or all(r["ok"] for r in parity) else 1


if __name__ == "__main__":
    sys.exit(main())
