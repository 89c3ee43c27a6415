r"""Multi-turn GRPO against TRL's ``GRPOTrainer`` tool loop: the same loss to 1e-5, then paired step timings.

``python benchmarks/trl_multiturn.py [--repeats N] [--overlap-blocks B --block-steps K] [--json PATH]`` runs the
three parts (parity, sequential timings, overlapped timings) and prints a table.
The single-turn comparison is :mod:`benchmarks.trl_compare`; this one reuses its helpers (clip
epsilons, reward scaling, gradient norms, the paired bootstrap, the ABAB step timer).

**The workload.** Tool-integrated maths (TIRMath-style): a system prompt, a maths question, then
up to 4 Python tool calls executed in a persistent sandboxed session, then a ``\boxed{}`` answer
checked by TIRMath's :class:`~agentrl.envs.tirmath.verify.MathVerifier` (reward 1 or 0). The tool
call is the Qwen2.5 format TRL parses (``<tool_call>{"name": "python", "arguments": {"code": ...}}
</tool_call>``) and the tool's reply comes back as Qwen2.5 renders a tool message
(``<|im_start|>user\n<tool_response>\n...\n</tool_response><|im_end|>``).

**The model.** A random 0.2M-parameter model writes no tool call, so TRL's loop would end after one
turn. :func:`build_tool_model` therefore takes :func:`~agentrl.llm.tiny.build_tiny_model` (Qwen2
architecture, float32, CPU), gives its tokenizer TRL's own Qwen2.5 chat template (the one TRL's
``add_response_schema`` recognises, so TRL's real parser reads the tool calls) and fine-tunes it for
a few seconds on scripted episodes: four calls ``print(k + k)`` (k = 1..4), then ``\boxed{8}`` or
``\boxed{9}`` (half each; the questions' gold answer is 8). Sampled at temperature 1 it mostly
follows the script and sometimes leaves it, so episodes have 1-4 tool calls and groups have reward
variance. Both sides start from this same folder.

**What is held equal.** The model and tokenizer, the prompt token ids (our env's system prompt is
the text TRL's template writes for the tool schema, checked token for token in part 1), batch (2
questions x G=4), completion budget (``--budget`` tokens per episode, the tool results included:
TRL's ``max_completion_length``; ours ``max_new_tokens`` with ``max_context_tokens = prompt +
budget``, so each turn may use what is left, as in TRL), at most 4 tool calls (TRL
``max_tool_calling_iterations=4``; our env ``max_turns=5``: a fifth tool call ends the episode
there, but our env still executes it where TRL does not, a rare case with this model), sampling
(temperature 1, no top-k/top-p), clip epsilons, no KL (TRL ``beta=0``), loss type, learning rate,
max grad norm 1. **Tool execution**: both sides run the code in the same sandbox, AgentRL's
process-tier persistent Python session (``make_sandbox("process", mode="session")``: a pooled worker
with warm spares, under bubblewrap when installed), built by the same factory TIRMath uses. TRL calls
it from its ``environment_factory`` class :class:`SandboxPython` (one instance per rollout, ``reset``
between episodes, its ``python`` method is the tool); ours from the TIRMath env subclass
:class:`ToolCallTIRMathEnv`. The reward is the same verifier on the last ``\boxed{}``.

**TRL's multi-turn path.** ``GRPOTrainer(environment_factory=SandboxPython, ...)``: TRL renders the
tool schema into the prompt, generates for the whole batch, parses each completion with the
tokenizer's response parser, calls the tools, appends each tool message's tokens (from its chat
template, never re-tokenising the history) and generates again for the rows that called a tool, up
to ``max_tool_calling_iterations``; the tool-result tokens are 0 in its ``tool_mask`` and the loss
mask is ``completion_mask * tool_mask``. Our loss mask (1 exactly on sampled tokens) is the same set.

**Part 1, parity** (:func:`parity_check`). One multi-turn batch collected once by *our* rollout engine
(our env, our sandbox), then frozen. TRL's side is its real code: ``_generate_single_turn`` is
patched to hand back, for each row it asks about, the next frozen assistant turn (rows are matched
by their token prefix), and everything else is TRL's: ``_generate_and_score_completions`` tokenises
the prompts with the tool schema, parses the tool calls, runs them in the sandbox through
:class:`SandboxPython`, builds the tool-result tokens and ``tool_mask``, scores the rewards and
advantages; then ``_compute_loss`` and backward. Checked first: TRL's prompt + completion ids equal
our trajectories' token ids row by row, TRL's ``completion_mask * tool_mask`` equals our loss mask,
and TRL ran as many tool calls as our env did. Then, as in :mod:`benchmarks.trl_compare`, per loss
type an *on-policy* case and an *off-policy* one (old logprobs, then every weight perturbed, so
clipping matters): the loss and total gradient norm pass when ``|ours - TRL| <= 1e-5 * max(1, |TRL|)``.

**Part 2, paired timings** (:func:`time_steps`). TRL runs ``trainer.train()``; the callback of
:mod:`benchmarks.trl_compare` times each of its steps (generation with the tool loop, rewards,
advantages, forward, backward, clipping, optimizer step) and runs one of our full steps before TRL's
on odd steps and after it on even ones (ABAB). Our step is :meth:`agentrl.train.grpo.GRPOTrainer.step`:
the async rollout engine collects the 8 episodes (each episode advances on its own, its sandbox
calls in env worker threads, its turns generated by our transformers backend), then the update. Rollouts
are *not* overlapped with the previous update (``overlap_rollouts=False``): in a paired run the
background collection would steal TRL's CPU time and hide our own. Warm-up pairs are dropped.
Reported: medians, ``ratio = median(ours) / median(TRL)`` with a 95% percentile-bootstrap interval
over the pairs, the median of per-pair ratios, the generate/update split, tool calls per episode and
completion tokens on each side.

**Part 3, overlapped timings** (:func:`time_overlapped`, ``--overlap-blocks B --block-steps K``, default
B=6, K=8, one warm-up block pair; ``--overlap-blocks 0`` skips it). Our design's answer to the step time:
``overlap_rollouts=True``, the next batch collected by a background thread while this step updates. Part 2
cannot measure it (the background collection would run during TRL's step), so part 3 times *blocks*, each
alone, never two at once: a fresh TRL trainer runs ``trainer.train()`` over ``(1 + B) * K`` steps, and a
callback groups them in blocks of K consecutive steps; beside each TRL block, inside the callback while
TRL's loop waits, runs a block of K consecutive :meth:`~agentrl.train.grpo.GRPOTrainer.step` calls of a fresh
trainer of ours with ``overlap_rollouts=True`` (same workload, model, G, budget, sampling, sandbox, loss as
part 2). Order within block pair b: TRL then ours for even b, ours then TRL for odd b (ABBA). Our block
starts with no prefetched batch (its first step collects in the foreground, not overlapped) and ends with
none in flight: before the block, ``max_steps`` of our trainer is set to ``step_index + K``, and
``Trainer.step`` prefetches only below ``max_steps``, so the block's last step starts no background
collection. Nothing is therefore drained or discarded (a drain that waits for and discards a pending
prefetch still runs after each block as a safeguard, outside any timing; the count it discards is
reported, expected 0). A tracker wraps our run's ``collect`` and counts collections in flight; at the
start and at the end of every TRL step the callback checks that none is in flight and no prefetch is
pending, and raises ``RuntimeError`` otherwise (``checks.idle_checks`` counts the checks passed). Weights
are synced as our trainer always does (after each update, into the generation copy between generation
batches), so a prefetched batch is up to one policy version stale; the ``staleness/mean`` our trainer
records per step is reported (a block's first batch: 0). Per-step time, both sides: block wall time / K
(TRL's block from its first step's ``on_step_begin`` to its last step's ``on_step_end``, so the gaps between
its steps count; ours from before the first ``step()`` to after the last). So our figure includes one
un-overlapped collection and one un-overlapped update per K steps: it is not the steady state of a long run.
That is ``ratio_steady``: per block pair, the median of steps 2..K-1 of our block (a prefetched batch, and the
next one collected during the update) over TRL's per-step time, with its interval. Reported: medians over blocks,
``ratio = median(ours) / median(TRL)`` with a 95% percentile-bootstrap interval over the block pairs
(:func:`benchmarks.trl_compare.paired_ratio`), the median per-pair ratio, our waits for the batch and
update times, staleness, and completion tokens on each side. **Not like for like in compute**: both
sides run with the same ``torch.set_num_threads`` (1 by default), but with overlap our step has two Python
threads doing torch work at once (collection and update), so up to 2 cores, while TRL's synchronous loop
uses one at a time. That is the asynchronous design being measured; part 2 is the like-for-like figure.

**Reading the ratio.** Below 1: our step is faster. The interval's upper bound below 0.5 would meet
the project's goal (<= 0.5x); ``goal_met`` says it of part 2, ``overlap_goal_met`` of part 3.
With a 0.2M-parameter model on CPU, a step is mostly Python and
``generate`` overhead per decoded token, plus the tool calls; it says nothing of GPU throughput.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

try:  # imported as benchmarks.trl_multiturn (tests) or run as a file (python benchmarks/trl_multiturn.py)
    from benchmarks import trl_compare
except ImportError:  # pragma: no cover - depends on how the script is started
    import trl_compare  # type: ignore[no-redef]

__all__ = [
    "LOSS_TYPES",
    "SandboxPython",
    "ToolCallTIRMathEnv",
    "build_tool_model",
    "format_report",
    "main",
    "parity_check",
    "time_overlapped",
    "time_steps",
]

LOSS_TYPES = trl_compare.LOSS_TYPES
GROUP_SIZE = trl_compare.GROUP_SIZE
NUM_PROMPTS = trl_compare.NUM_PROMPTS
MAX_TOOL_CALLS = 4
BUDGET = 512  # completion tokens per episode, tool results included
TOLERANCE = trl_compare.TOLERANCE
SFT_STEPS = 40
OVERLAP_BLOCKS = 12  # timed block pairs of the overlapped mode
BLOCK_STEPS = 8  # steps per block (K)
BASE_SYSTEM = "You are an expert mathematician. Use the python tool to compute, then answer in \\boxed{}."
GOLD = "8"
QUESTIONS = ("What is 2 + 6?", "What is 3 + 5?", "What is 1 + 7?", "What is 4 + 4?")
TOOL_NAME = "python"


# -- the tool, the same on both sides --------------------------------------------------------------
def _sandbox_factory() -> Callable[[], Any]:
    """The factory of TIRMath's default sandbox: a persistent session on the process tier."""
    from agentrl.envs.tirmath.env import _session_sandbox_factory

    return _session_sandbox_factory(
        "process", {}, timeout_s=10.0, memory_mb=1024, max_output_chars=4000, isolation="auto"
    )


def tool_text(result: Any) -> str:
    """What the tool returns for an :class:`~agentrl.sandboxes.base.ExecutionResult`: its output, or the error."""
    body = str(result.output).rstrip("\n")
    if not result.ok:
        error = result.error or "the code failed"
        body = f"{body}\n{error}" if body else error
    return body or "[no output; use print() to see values]"


def _tool_response(action: Any, result: Any) -> str:
    """Our env's observation: the tool message's content as Qwen2.5 renders a ``tool`` message."""
    return f"<tool_response>\n{tool_text(result)}\n</tool_response>"


class SandboxPython:
    """TRL's ``environment_factory`` class: one persistent sandboxed Python session per rollout."""

    def __init__(self) -> None:
        self._sandbox = _sandbox_factory()()
        self._used = False
        self.calls = 0

    def reset(self, **kwargs: Any) -> None:
        """A fresh session for the next episode (the tools' state does not leak between rollouts)."""
        if self._used:
            self._sandbox.reset()
        self._used = False

    def python(self, code: str) -> str:
        """Run Python code in a persistent sandboxed session.

        Args:
            code: Python source code to run.

        Returns:
            What the code printed.
        """
        from agentrl.sandboxes.base import ExecutionRequest

        self._used = True
        self.calls += 1
        return tool_text(self._sandbox.execute(ExecutionRequest(code)))

    def _close(self) -> None:  # private: TRL exposes every public method as a tool
        self._sandbox.close()


def _answer_of(text: str) -> str | None:
    from agentrl.envs.tirmath.actions import extract_last_boxed

    return extract_last_boxed(text)


def tir_reward(completions: Sequence[Any], answer: Sequence[str], **kwargs: Any) -> list[float | None]:
    r"""TRL reward function: TIRMath's verifier on the last ``\boxed{}`` of the last assistant message."""
    from agentrl.core.task import Task
    from agentrl.envs.tirmath.verify import MathVerifier

    verifier = MathVerifier()
    out: list[float | None] = []
    for completion, gold in zip(completions, answer, strict=True):
        messages = completion if isinstance(completion, list) else [{"role": "assistant", "content": completion}]
        last = next((m for m in reversed(messages) if m.get("role") == "assistant"), {"content": ""})
        boxed = _answer_of(str(last.get("content") or ""))
        out.append(0.0 if boxed is None else verifier(Task("t", "", gold), boxed.strip(), {}).value)
    return out


# -- our env: TIRMath with the Qwen2.5 tool-call format ----------------------------------------------
def _tool_calls_of(text: str) -> list[dict[str, Any]]:
    import re

    calls = []
    for body in re.findall(r"<tool_call>\s*(.*?)\s*</tool_call>", text, re.DOTALL):
        try:
            call = json.loads(body)
        except ValueError:
            continue
        if isinstance(call, dict):
            calls.append(call)
    return calls


def _action_set() -> Any:
    from agentrl.core.actions import Action, ParseError
    from agentrl.envs.tirmath.actions import TIRActionSet

    class ToolCallActions(TIRActionSet):
        r"""A ``\boxed{}`` answer, else ``<tool_call>`` JSON calls of ``python`` (run in order)."""

        def describe(self) -> str:
            return ""  # the tool schema is in the system prompt, as TRL's template writes it

        def parse(self, text: str) -> Action | ParseError:
            boxed = _answer_of(text)
            if boxed is not None:
                return Action("answer", boxed.strip(), raw=text)
            calls = _tool_calls_of(text)
            code = [
                str(c["arguments"]["code"])
                for c in calls
                if c.get("name") == TOOL_NAME and isinstance(c.get("arguments"), dict) and "code" in c["arguments"]
            ]
            if code:
                return Action("code", "\n".join(code), raw=text)
            return ParseError("no <tool_call> of python and no \\boxed{} answer", raw=text)

    return ToolCallActions()


def _make_env_class() -> type:
    from agentrl.envs.tirmath.env import TIRMathEnv

    class _Env(TIRMathEnv):
        metadata: dict[str, Any] = {**TIRMathEnv.metadata, "stop_sequences": ()}  # TRL has no stop strings

        def __init__(self, dataset: str, system_prompt: str) -> None:
            super().__init__(
                dataset=dataset,
                dataset_format="simple",
                max_turns=MAX_TOOL_CALLS + 1,
                end_on_void_turn=True,  # a turn with no tool call ends the episode, as in TRL's loop
                sandbox_factory=_sandbox_factory(),
            )
            self.action_set = _action_set()
            self._system_prompt = system_prompt
            self._render_result = _tool_response

        def initial_observation(self, task: Any) -> str:
            return str(task.prompt)

    return _Env


def ToolCallTIRMathEnv(dataset: str | Path, system_prompt: str) -> Any:
    """TIRMath over the questions in ``dataset`` (simple JSONL), with Qwen2.5 tool calls and replies."""
    return _make_env_class()(str(dataset), system_prompt)


# -- the model ---------------------------------------------------------------------------------------
def _qwen25_template() -> str:
    import trl

    return (Path(trl.__file__).parent / "chat_templates" / "qwen2_5.jinja").read_text()


def tool_schema_system(tokenizer: Any) -> str:
    """The system message TRL's template writes for :attr:`BASE_SYSTEM` and the ``python`` tool."""
    text = tokenizer.apply_chat_template(
        [{"role": "system", "content": BASE_SYSTEM}, {"role": "user", "content": "Q"}],
        tools=[SandboxPython.python],
        tokenize=False,
    )
    start = "<|im_start|>system\n"
    return str(text[len(start) : text.index("<|im_end|>")])


def _call_text(k: int) -> str:
    code = json.dumps({"name": TOOL_NAME, "arguments": {"code": f"print({k} + {k})"}})
    return f"<tool_call>\n{code}\n</tool_call>"


def _scripted_episode(tokenizer: Any, question: str, answer: str) -> tuple[list[int], list[int]]:
    """Token ids and loss mask of one scripted episode (the glue as both sides build it)."""
    from agentrl.rollout.chat import ChatTokenizer

    chat = ChatTokenizer(tokenizer)
    eos = int(tokenizer.convert_tokens_to_ids("<|im_end|>"))
    system = tool_schema_system(tokenizer)
    ids = chat.prompt_ids([{"role": "system", "content": system}, {"role": "user", "content": question}])
    mask = [0] * len(ids)
    for k in range(1, MAX_TOOL_CALLS + 1):
        turn = [*chat.encode(_call_text(k)), eos]
        glue = chat.observation_ids(f"<tool_response>\n{2 * k}\n</tool_response>", turn)
        ids += turn + glue
        mask += [1] * len(turn) + [0] * len(glue)
    turn = [*chat.encode(f"The answer is \\boxed{{{answer}}}."), eos]
    return ids + turn, mask + [1] * len(turn)


def build_tool_model(workdir: str | Path, *, steps: int = SFT_STEPS, seed: int = 0) -> Path:
    """The tiny model with TRL's Qwen2.5 template, fine-tuned to follow the tool-call script (see above)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from agentrl.llm.tiny import build_tiny_model

    workdir = Path(workdir)
    target = workdir / "tool-model"
    if (target / "config.json").exists():
        return target
    base = build_tiny_model(workdir / "tiny-qwen2", seed=seed)
    tokenizer = AutoTokenizer.from_pretrained(base)
    tokenizer.chat_template = _qwen25_template()
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    rows = [_scripted_episode(tokenizer, q, a) for q, a in zip(QUESTIONS, (GOLD, "9", GOLD, "9"), strict=True)]
    width = max(len(ids) for ids, _ in rows)
    input_ids = torch.full((len(rows), width), int(tokenizer.pad_token_id), dtype=torch.long)
    labels = torch.full_like(input_ids, -100)
    attention = torch.zeros_like(input_ids)
    for i, (ids, mask) in enumerate(rows):
        input_ids[i, : len(ids)] = torch.tensor(ids)
        attention[i, : len(ids)] = 1
        labels[i, : len(ids)] = torch.tensor([t if m else -100 for t, m in zip(ids, mask, strict=True)])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
        model.train()
        for _ in range(steps):
            loss = model(input_ids=input_ids, attention_mask=attention, labels=labels).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.eval()
    model.save_pretrained(target, safe_serialization=True)
    tokenizer.save_pretrained(target)
    (target / "sft.json").write_text(json.dumps({"steps": steps, "final_loss": loss.item()}))
    return target


def write_questions(workdir: str | Path) -> Path:
    """The questions as a simple JSONL file (TIRMath's ``dataset=``)."""
    path = Path(workdir) / "questions.jsonl"
    path.write_text("".join(json.dumps({"question": q, "answer": GOLD}) + "\n" for q in QUESTIONS))
    return path


def _prompt(question: str) -> list[dict[str, str]]:
    """TRL's dataset prompt: TRL's template adds the tool schema to this system message."""
    return [{"role": "system", "content": BASE_SYSTEM}, {"role": "user", "content": question}]


# -- the two trainers --------------------------------------------------------------------------------
def make_trl_trainer(
    model: Any,
    tokenizer: Any,
    loss_type: str,
    *,
    output_dir: str | Path,
    budget: int = BUDGET,
    learning_rate: float = 1e-5,
    max_steps: int = 1,
    seed: int = 0,
) -> Any:
    """TRL's ``GRPOTrainer`` with ``environment_factory=SandboxPython`` on the compared configuration."""
    import os

    from datasets import Dataset
    from trl import GRPOTrainer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    config = trl_compare.grpo_config(
        output_dir, loss_type, max_completion_length=budget, learning_rate=learning_rate, max_steps=max_steps,
        seed=seed, max_tool_calling_iterations=MAX_TOOL_CALLS,
    )
    n = NUM_PROMPTS * max(1, max_steps)
    questions = [QUESTIONS[i % len(QUESTIONS)] for i in range(n)]
    dataset = Dataset.from_dict({"prompt": [_prompt(q) for q in questions], "answer": [GOLD] * n})
    return GRPOTrainer(
        model=model,
        reward_funcs=tir_reward,
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
        environment_factory=SandboxPython,
    )


def _close_trl(trainer: Any) -> None:
    for pool in getattr(trainer, "_environment_pool", {}).values():
        for env in pool:
            env._close()


def _tool_results(trajectory: Any) -> int:
    """Tool results a trajectory carries (turns followed by an env reply)."""
    return sum(1 for turn in trajectory.turns if turn.observation_span[1] > turn.observation_span[0])


def make_our_trainer(
    model_dir: str | Path,
    loss_type: str,
    *,
    workdir: str | Path,
    budget: int = BUDGET,
    learning_rate: float = 1e-5,
    seed: int = 0,
    overlap: bool = False,
) -> Any:
    """Our :class:`~agentrl.train.grpo.GRPOTrainer` on :class:`ToolCallTIRMathEnv`, the compared configuration.

    ``overlap``: ``overlap_rollouts`` (the next batch collected in the background during this update).
    """
    import functools

    from transformers import AutoTokenizer

    from agentrl.train.grpo import GRPOArgs, GRPOTrainer

    workdir = Path(workdir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    system = tool_schema_system(tokenizer)
    prompt_len = len(
        tokenizer.apply_chat_template(
            _prompt(max(QUESTIONS, key=len)),
            tools=[SandboxPython.python],
            add_generation_prompt=True,
            tokenize=True,
            return_dict=False,
        )
    )
    low, high = trl_compare._epsilons(loss_type)
    args = GRPOArgs(
        env_fn=functools.partial(ToolCallTIRMathEnv, write_questions(workdir), system),
        model=str(model_dir),
        output_dir=str(workdir / "ours"),
        loss_type=loss_type,
        group_size=GROUP_SIZE,
        prompts_per_step=NUM_PROMPTS,
        max_new_tokens=budget,  # a turn may use what is left of the episode's budget, as in TRL
        max_context_tokens=prompt_len + budget,
        temperature=1.0,
        top_p=1.0,
        learning_rate=learning_rate,
        max_grad_norm=1.0,
        clip_low=low,
        clip_high=high,
        kl_coef=0.0,
        scale_rewards=trl_compare._scale(loss_type),
        dynamic_sampling=False,
        overlap_rollouts=overlap,
        device="cpu",
        dtype="float32",
        seed=seed,
        tensorboard=False,
    )
    trainer = GRPOTrainer(args)
    inner = trainer.update

    def update(trajectories: list[Any]) -> dict[str, Any]:
        metrics = inner(trajectories)
        ok = [t for t in trajectories if t.ok]
        metrics["tools/results_per_episode"] = statistics.fmean(_tool_results(t) for t in ok) if ok else 0.0
        return metrics

    trainer.update = update  # type: ignore[method-assign]  # counts the tool results, then our update
    return trainer


# -- part 1: parity ----------------------------------------------------------------------------------
def collect_frozen(model_dir: Path, workdir: Path, *, seed: int = 0, budget: int = BUDGET) -> list[Any]:
    """One batch of multi-turn trajectories from our rollout engine (2 questions x G)."""
    trainer = make_our_trainer(model_dir, "grpo", workdir=workdir, budget=budget, seed=seed)
    try:
        trajectories = trainer.run.collect(trainer.requests(0), 0)
    finally:
        trainer.close()
    if len(trajectories) != NUM_PROMPTS * GROUP_SIZE or not all(t.ok for t in trajectories):
        raise RuntimeError(f"the frozen batch is incomplete: {[t.failure for t in trajectories if not t.ok]}")
    return sorted(trajectories, key=lambda t: (str(t.request.group_id), t.request.index))


def _frozen_generate(trajectories: Sequence[Any], log: list[int]) -> Callable[..., tuple[list[list[int]], None]]:
    """A stand-in for TRL's ``_generate_single_turn``: the next frozen turn of the row each prompt continues."""
    served = [0] * len(trajectories)

    def generate(prompt_ids: Any, *args: Any, **kwargs: Any) -> tuple[list[list[int]], None]:
        out: list[list[int]] = []
        claimed: set[int] = set()
        for seq in prompt_ids:
            seq = [int(t) for t in seq]
            match = None
            for i, t in enumerate(trajectories):
                if i in claimed or served[i] >= len(t.turns):
                    continue
                start, end = t.turns[served[i]].completion_span
                if start == len(seq) and t.token_ids[:start] == seq:
                    match = i
                    break
            if match is None:
                raise AssertionError("TRL asked for a turn that no frozen trajectory has at that prefix")
            claimed.add(match)
            start, end = trajectories[match].turns[served[match]].completion_span
            served[match] += 1
            out.append(list(trajectories[match].token_ids[start:end]))
        log.append(len(prompt_ids))
        return out, None

    return generate


def _parity_case(
    model_dir: Path,
    tokenizer: Any,
    trajectories: Sequence[Any],
    loss_type: str,
    *,
    off_policy: bool,
    workdir: Path,
    budget: int,
    perturb_scale: float,
    tol: float,
) -> dict[str, Any]:
    import torch

    from agentrl.train.advantages import group_advantages
    from agentrl.train.batch import pack_trajectories
    from agentrl.train.logprobs import token_logprobs
    from agentrl.train.losses import LossConfig, policy_loss

    model = trl_compare._load_model(model_dir)
    trainer = make_trl_trainer(model, tokenizer, loss_type, output_dir=workdir / f"trl-{loss_type}", budget=budget)
    try:
        trainer.current_gradient_accumulation_steps = 1
        batch = pack_trajectories(list(trajectories), int(tokenizer.pad_token_id))
        old = None
        if off_policy:
            with torch.no_grad():
                old, _ = token_logprobs(model, batch.input_ids, batch.attention_mask, with_entropy=False)
            trl_compare._perturb(model, perturb_scale, seed=1234)

        # TRL: its own multi-turn pipeline (tool parsing, sandbox calls, tool tokens, tool_mask) on the frozen turns.
        calls_before = sum(env.calls for pool in trainer._environment_pool.values() for env in pool)
        log: list[int] = []
        trainer._generate_single_turn = _frozen_generate(trajectories, log)
        rows = [{"prompt": _prompt(str(t.messages[1]["content"])), "answer": GOLD} for t in trajectories]
        inputs = trainer._generate_and_score_completions(rows)
        trl_calls = sum(env.calls for pool in trainer._environment_pool.values() for env in pool) - calls_before
        tool_mask = inputs.get("tool_mask")
        if tool_mask is None:
            raise AssertionError("TRL built no tool_mask: its tool loop did not run")
        loss_mask = inputs["completion_mask"] * tool_mask
        same_ids = same_mask = True
        trl_prompt_lens = []
        for i, t in enumerate(trajectories):
            prompt = inputs["prompt_ids"][i][inputs["prompt_mask"][i].bool()].tolist()
            completion = inputs["completion_ids"][i][inputs["completion_mask"][i].bool()].tolist()
            trl_prompt_lens.append(len(prompt))
            same_ids &= prompt + completion == list(t.token_ids) and len(prompt) == t.prompt_length
            same_mask &= loss_mask[i, : len(completion)].tolist() == list(t.loss_mask[len(prompt) :])
        if off_policy:
            assert old is not None
            width = inputs["completion_ids"].size(1)
            trl_old = torch.zeros(len(trajectories), width)
            for i, (t, p) in enumerate(zip(trajectories, trl_prompt_lens, strict=True)):
                n = len(t.token_ids) - p
                trl_old[i, :n] = old[i, p : p + n]
            inputs["old_per_token_logps"] = trl_old * inputs["completion_mask"]
        model.zero_grad(set_to_none=True)
        trl_loss = trainer._compute_loss(model, inputs)
        trl_loss.backward()
        trl_grads = trl_compare._grads(model)

        # Ours: advantages from our env's rewards, our logprobs on the packed rows, our loss.
        rewards = torch.tensor([t.total_reward for t in trajectories], dtype=torch.float32)
        groups = [t.request.group_id for t in trajectories]
        adv = group_advantages(rewards, groups, scale=trl_compare._scale(loss_type))
        low, high = trl_compare._epsilons(loss_type)
        config = LossConfig(loss_type, clip_low=low, clip_high=high, max_completion_length=budget)
        model.zero_grad(set_to_none=True)
        logps, _ = token_logprobs(model, batch.input_ids, batch.attention_mask, with_entropy=False)
        old_ours = logps.detach() if old is None else old
        our_loss, stats = policy_loss(logps, old_ours, adv[:, None].expand_as(logps), batch.loss_mask, config)
        our_loss.backward()
        our_grads = trl_compare._grads(model)
    finally:
        _close_trl(trainer)
    row: dict[str, Any] = {
        "loss_type": loss_type,
        "case": "off_policy" if off_policy else "on_policy",
        "trl_loss": float(trl_loss.detach()),
        "our_loss": float(our_loss.detach()),
        "trl_grad_norm": trl_compare._norm(trl_grads),
        "our_grad_norm": trl_compare._norm(our_grads),
        "max_grad_diff": max(float((a - b).abs().max()) for a, b in zip(trl_grads, our_grads, strict=True)),
        "max_advantage_diff": float((inputs["advantages"].float() - adv).abs().max()),
        "num_items_in_batch": float(inputs["num_items_in_batch"]),
        "clip_frac": float(stats["clip_low_frac"] + stats["clip_high_frac"]),
        "same_token_ids": bool(same_ids),
        "same_loss_mask": bool(same_mask),
        "trl_tool_calls": int(trl_calls),
        "our_tool_results": sum(_tool_results(t) for t in trajectories),
        "trl_generate_calls": len(log),
        "masked_tool_tokens": int((inputs["completion_mask"] * (1 - tool_mask)).sum()),
    }
    row["loss_diff"] = abs(row["our_loss"] - row["trl_loss"])
    row["grad_norm_diff"] = abs(row["our_grad_norm"] - row["trl_grad_norm"])
    row["ok"] = (
        trl_compare._close(row["our_loss"], row["trl_loss"], tol)
        and trl_compare._close(row["our_grad_norm"], row["trl_grad_norm"], tol)
        and row["same_token_ids"]
        and row["same_loss_mask"]
        and row["trl_tool_calls"] == row["our_tool_results"]
    )
    return row


def parity_check(
    loss_types: Sequence[str] = LOSS_TYPES,
    model_dir: str | Path | None = None,
    *,
    off_policy: bool = True,
    perturb_scale: float = 0.005,
    seed: int = 0,
    budget: int = BUDGET,
    sft_steps: int = SFT_STEPS,
    tol: float = TOLERANCE,
) -> list[dict[str, Any]]:
    """One multi-turn batch from our engine, frozen; TRL's multi-turn loss on it against ours, per loss type.

    Returns:
        One dict per (loss type, case): the keys of :func:`benchmarks.trl_compare.parity_check` plus
        ``same_token_ids`` (TRL rebuilt our rows exactly), ``same_loss_mask`` (its ``completion_mask *
        tool_mask`` is our loss mask), ``trl_tool_calls`` / ``our_tool_results`` (tool calls TRL ran and
        tool results our rows hold), ``trl_generate_calls`` (TRL's generation rounds: 1 + tool iterations),
        ``masked_tool_tokens`` and the batch's ``rewards``.
    """
    from transformers import AutoTokenizer

    unknown = [t for t in loss_types if t not in LOSS_TYPES]
    if unknown:
        raise ValueError(f"unknown loss types {unknown}; choose from {LOSS_TYPES}")
    with tempfile.TemporaryDirectory(prefix="trl-multiturn-") as tmp:
        workdir = Path(tmp)
        path = Path(model_dir) if model_dir is not None else build_tool_model(workdir, steps=sft_steps, seed=seed)
        tokenizer = AutoTokenizer.from_pretrained(path)
        trajectories = collect_frozen(path, workdir, seed=seed, budget=budget)
        rewards = [t.total_reward for t in trajectories]
        results = []
        for loss_type in loss_types:
            for off in (False, True) if off_policy else (False,):
                row = _parity_case(
                    path,
                    tokenizer,
                    trajectories,
                    loss_type,
                    off_policy=off,
                    workdir=workdir,
                    budget=budget,
                    perturb_scale=perturb_scale,
                    tol=tol,
                )
                row["rewards"] = rewards
                results.append(row)
    return results


# -- part 2: paired timings --------------------------------------------------------------------------
def _ToolCounter(trainer: Any, out: list[float]) -> Any:
    """A callback recording TRL's tool calls per episode of each step (its metrics are cleared when it logs)."""
    from transformers import TrainerCallback

    class _Counter(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            out.append(float(trainer._metrics["train"]["tools/call_frequency"][-1]))

    return _Counter()


def time_steps(
    repeats: int = 5,
    *,
    loss_type: str = "grpo",
    warmup: int = 1,
    model_dir: str | Path | None = None,
    budget: int = BUDGET,
    learning_rate: float = 1e-5,
    seed: int = 0,
    sft_steps: int = SFT_STEPS,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Alternate ``warmup + repeats`` full multi-turn GRPO steps of TRL's with ours; medians and ratios.

    Returns:
        As :func:`benchmarks.trl_compare.time_steps`, plus ``trl.tool_calls`` / ``ours.tool_calls`` (tool calls
        per episode, per step) and ``median`` of them.
    """
    import torch
    from transformers import AutoTokenizer, PrinterCallback

    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    our_metrics: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="trl-multiturn-") as tmp, ExitStack() as stack:
        workdir = Path(tmp)
        path = Path(model_dir) if model_dir is not None else build_tool_model(workdir, steps=sft_steps, seed=seed)
        ours = make_our_trainer(path, loss_type, workdir=workdir, budget=budget, learning_rate=learning_rate, seed=seed)
        stack.callback(ours.close)

        def our_step() -> dict[str, Any]:
            metrics = dict(ours.step())
            our_metrics.append(metrics)
            return metrics

        tokenizer = AutoTokenizer.from_pretrained(path)
        total = warmup + repeats
        torch.manual_seed(seed)
        trainer = make_trl_trainer(
            trl_compare._load_model(path),
            tokenizer,
            loss_type,
            output_dir=workdir / "trl",
            budget=budget,
            learning_rate=learning_rate,
            max_steps=total,
            seed=seed,
        )
        stack.callback(_close_trl, trainer)
        timer = trl_compare._TRLTimer(trainer, our_step, warmup)
        trainer.add_callback(trl_compare._callback(timer))
        trl_tools: list[float] = []
        trainer.add_callback(_ToolCounter(trainer, trl_tools))
        trainer.remove_callback(PrinterCallback)
        trainer.train()
        trl_tools = trl_tools[warmup:]
    keys = ("step_s", "generate_s", "update_s")
    trl = {k: [r[k] for r in timer.trl] for k in (*keys, "completion_tokens", "reward")}
    trl["tool_calls"] = trl_tools
    extra = ("reported_step_s", "completion_tokens", "reward")
    mine = {k: [r[k] for r in timer.ours] for k in (*keys, *extra)}
    mine["tool_calls"] = [float(m["tools/results_per_episode"]) for m in our_metrics[warmup:]]
    report: dict[str, Any] = {
        "config": {
            "loss_type": loss_type,
            "repeats": repeats,
            "warmup": warmup,
            "prompts": NUM_PROMPTS,
            "group_size": GROUP_SIZE,
            "max_completion_length": budget,
            "max_tool_calls": MAX_TOOL_CALLS,
            "learning_rate": learning_rate,
            "dtype": "float32",
            "device": "cpu",
            "torch_threads": torch.get_num_threads(),
            "sandbox": "agentrl process tier, persistent session (the same factory on both sides)",
            "trl_api": "GRPOTrainer(environment_factory=SandboxPython)",
        },
        "trl": trl,
        "ours": mine,
        "median": {
            "trl": {k: statistics.median(v) for k, v in trl.items()},
            "ours": {k: statistics.median(v) for k, v in mine.items()},
        },
        "ratios": {k: trl_compare.paired_ratio(mine[k], trl[k], confidence=confidence, seed=seed) for k in keys},
        "notes": [],
    }
    return report


# -- part 3: overlapped blocks -----------------------------------------------------------------------
class _CollectionTracker:
    """Counts our trainer's collections in flight and those run by its background collector thread."""

    def __init__(self, ours: Any) -> None:
        import threading

        self.ours = ours
        self._lock = threading.Lock()
        self.in_flight = 0
        self.background = 0  # collections that ran in the collector thread (prefetches)
        self.foreground = 0  # collections run by step() itself (a block's first step)
        inner = ours.run.collect

        def collect(requests: Sequence[Any], step: int | None = None) -> list[Any]:
            in_background = threading.current_thread().name.startswith("agentrl-collect")
            with self._lock:
                self.in_flight += 1
                if in_background:
                    self.background += 1
                else:
                    self.foreground += 1
            try:
                return list(inner(requests, step))
            finally:
                with self._lock:
                    self.in_flight -= 1

        ours.run.collect = collect  # PolicyRun.prefetch submits self.collect: this wrapper

    def busy(self) -> bool:
        """A collection is running, or a prefetched batch is waiting (its collection may still run)."""
        pending = self.ours.run._pending
        with self._lock:
            return self.in_flight > 0 or pending is not None

    def drain(self) -> tuple[int, float]:
        """Wait for a pending prefetch to finish and discard it; ``(discarded, seconds waited)``."""
        started = time.perf_counter()
        pending, self.ours.run._pending = self.ours.run._pending, None
        if pending is not None:
            pending[1].exception()  # wait for it, whatever it did; its batch is thrown away
        return int(pending is not None), time.perf_counter() - started


class _BlockTimer:
    """A ``TrainerCallback``: TRL's steps in blocks of ``block_steps``, a block of our overlapped steps beside each.

    Pair ``b`` runs TRL's block then ours when ``b`` is even, ours then TRL's when it is odd (ABBA), each
    block alone: our block runs inside this callback, between two TRL steps, while TRL's loop waits.
    """

    def __init__(self, trainer: Any, ours: Any, block_steps: int, warmup: int) -> None:
        self.trainer, self.ours, self.k, self.warmup = trainer, ours, block_steps, warmup
        self.tracker = _CollectionTracker(ours)
        self.trl: list[dict[str, Any]] = []
        self.mine: list[dict[str, Any]] = []
        self.idle_checks = 0  # TRL step starts and ends at which no collection of ours was running
        self.discarded = 0
        self.drain_s = 0.0
        self._index = 0  # TRL steps begun
        self._block_start = 0.0
        self._step_start = 0.0
        self._gen = 0.0
        self._steps: list[dict[str, float]] = []
        trl_compare._time_generation(self, trainer)

    def _assert_idle(self, where: str) -> None:
        if self.tracker.busy():
            raise RuntimeError(f"our background collection is running at TRL's {where}: the timing is not fair")
        self.idle_checks += 1

    def _our_block(self, pair: int) -> None:
        """K steps of ours with overlap on, from no prefetched batch to none: block wall time / K per step."""
        ours = self.ours
        discarded, waited = self.tracker.drain()  # nothing is left over by design (see below); a safeguard
        self.discarded += discarded
        self.drain_s += waited
        # The block's last step starts no prefetch (Trainer.step prefetches only below max_steps), so
        # the block ends with nothing in the background and the next block starts with nothing prefetched.
        ours.args.max_steps = ours.step_index + self.k
        background = self.tracker.background
        start = time.perf_counter()
        metrics = [dict(ours.step()) for _ in range(self.k)]
        wall = time.perf_counter() - start
        discarded, waited = self.tracker.drain()  # must be (0, ~0): checked by _assert_idle before TRL's steps
        self.discarded += discarded
        self.drain_s += waited
        if pair < self.warmup:
            return
        self.mine.append(
            {
                "step_s": wall / self.k,
                "block_s": wall,
                "steps_s": [float(m["time/step_s"]) for m in metrics],  # as our trainer reports each step
                "wait_s": [float(m["time/generate_s"]) for m in metrics],  # waiting for the batch
                "update_s": [float(m["time/update_s"]) for m in metrics],
                "staleness": [float(m.get("staleness/mean", math.nan)) for m in metrics],
                "prefetched": self.tracker.background - background,
                "completion_tokens": statistics.fmean(float(m.get("length/policy_tokens", math.nan)) for m in metrics),
                "reward": statistics.fmean(float(m.get("reward/mean", math.nan)) for m in metrics),
            }
        )

    # TrainerCallback protocol (duck-typed, as trl_compare._TRLTimer).
    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        pair, offset = divmod(self._index, self.k)
        if offset == 0:
            if pair % 2 == 1:
                self._our_block(pair)
            self._steps = []
        self._assert_idle("step start")
        self._gen = 0.0
        self._step_start = time.perf_counter()
        if offset == 0:
            self._block_start = self._step_start

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        now = time.perf_counter()
        self._assert_idle("step end")
        metrics = self.trainer._metrics["train"]
        self._steps.append(
            {
                "step_s": now - self._step_start,
                "generate_s": self._gen,
                "completion_tokens": float(metrics["completions/mean_length"][-1]),
                "reward": float(metrics["reward"][-1]),
            }
        )
        self._index += 1
        pair, offset = divmod(self._index, self.k)
        if offset:
            return
        pair -= 1  # the pair whose TRL block just ended
        if pair >= self.warmup:
            wall = now - self._block_start
            self.trl.append(
                {
                    "step_s": wall / self.k,
                    "block_s": wall,
                    "steps_s": [s["step_s"] for s in self._steps],
                    "generate_s": [s["generate_s"] for s in self._steps],
                    "completion_tokens": statistics.fmean(s["completion_tokens"] for s in self._steps),
                    "reward": statistics.fmean(s["reward"] for s in self._steps),
                }
            )
        if pair % 2 == 0:
            self._our_block(pair)


def time_overlapped(
    blocks: int = 5,
    block_steps: int = 4,
    *,
    loss_type: str = "grpo",
    warmup: int = 1,
    model_dir: str | Path | None = None,
    budget: int = BUDGET,
    learning_rate: float = 1e-5,
    seed: int = 0,
    sft_steps: int = SFT_STEPS,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Blocks of ``block_steps`` TRL steps alternating with blocks of our steps with ``overlap_rollouts=True``.

    ``warmup`` block pairs are run first and dropped. Per-step time of a block: its wall time / ``block_steps``
    on both sides. Our block starts with no prefetched batch and ends with none in flight (its last step
    prefetches nothing), so none of our work runs during TRL's blocks (checked at every TRL step's start
    and end: a ``RuntimeError`` otherwise).

    Returns:
        ``config``; ``trl`` / ``ours``: one dict per timed block (``step_s`` = block wall / K, ``block_s``,
        per-step details; ours also ``wait_s`` (time waiting for the batch), ``update_s``, ``staleness``
        (the ``staleness/mean`` our trainer records per step) and ``prefetched`` (batches collected in the
        background)); ``median``; ``ratio`` (:func:`benchmarks.trl_compare.paired_ratio` over the block pairs);
        ``checks`` (``idle_checks``: TRL step starts and ends seen with nothing of ours running,
        ``discarded_prefetches`` and ``drain_s``: expected 0).
    """
    import torch
    from transformers import AutoTokenizer, PrinterCallback

    if blocks < 1 or block_steps < 1 or warmup < 0:
        raise ValueError("blocks and block_steps must be at least 1, warmup at least 0")
    pairs = warmup + blocks
    with tempfile.TemporaryDirectory(prefix="trl-multiturn-overlap-") as tmp, ExitStack() as stack:
        workdir = Path(tmp)
        path = Path(model_dir) if model_dir is not None else build_tool_model(workdir, steps=sft_steps, seed=seed)
        ours = make_our_trainer(
            path, loss_type, workdir=workdir, budget=budget, learning_rate=learning_rate, seed=seed, overlap=True
        )
        stack.callback(ours.close)
        tokenizer = AutoTokenizer.from_pretrained(path)
        torch.manual_seed(seed)
        trainer = make_trl_trainer(
            trl_compare._load_model(path),
            tokenizer,
            loss_type,
            output_dir=workdir / "trl",
            budget=budget,
            learning_rate=learning_rate,
            max_steps=pairs * block_steps,
            seed=seed,
        )
        stack.callback(_close_trl, trainer)
        timer = _BlockTimer(trainer, ours, block_steps, warmup)
        trainer.add_callback(trl_compare._callback(timer))
        trainer.remove_callback(PrinterCallback)
        trainer.train()
        if len(timer.trl) != blocks or len(timer.mine) != blocks:
            raise RuntimeError(f"expected {blocks} timed blocks a side, got {len(timer.trl)} and {len(timer.mine)}")
    trl_step = [b["step_s"] for b in timer.trl]
    our_step = [b["step_s"] for b in timer.mine]
    staleness = [s for b in timer.mine for s in b["staleness"]]
    overlapped = [s for b in timer.mine for s in b["staleness"][1:]]  # the steps whose batch was prefetched
    # Steps 2..K-1 of a block: a prefetched batch, and the next one collected during the update (steady state).
    inner = [s for b in timer.mine for s in b["steps_s"][1:-1]]
    steady = [statistics.median(b["steps_s"][1:-1]) if block_steps > 2 else math.nan for b in timer.mine]
    return {
        "config": {
            "loss_type": loss_type,
            "blocks": blocks,
            "block_steps": block_steps,
            "warmup_blocks": warmup,
            "order": "ABBA by block pair: TRL then ours on even pairs, ours then TRL on odd ones",
            "per_step": "block wall time / block_steps, on both sides",
            "prompts": NUM_PROMPTS,
            "group_size": GROUP_SIZE,
            "max_completion_length": budget,
            "max_tool_calls": MAX_TOOL_CALLS,
            "learning_rate": learning_rate,
            "torch_threads": torch.get_num_threads(),
            "overlap_rollouts": True,
            "our_threads_doing_torch_work": 2,
        },
        "trl": timer.trl,
        "ours": timer.mine,
        "median": {
            "trl": {
                "step_s": statistics.median(trl_step),
                "completion_tokens": statistics.median(b["completion_tokens"] for b in timer.trl),
                "reward": statistics.median(b["reward"] for b in timer.trl),
            },
            "ours": {
                "step_s": statistics.median(our_step),
                "steady_step_s": statistics.median(inner) if inner else math.nan,
                "wait_s": statistics.median(w for b in timer.mine for w in b["wait_s"]),
                "update_s": statistics.median(u for b in timer.mine for u in b["update_s"]),
                "completion_tokens": statistics.median(b["completion_tokens"] for b in timer.mine),
                "reward": statistics.median(b["reward"] for b in timer.mine),
            },
        },
        "staleness": {
            "mean": statistics.fmean(staleness),
            "max": max(staleness),
            "prefetched_steps_mean": statistics.fmean(overlapped) if overlapped else math.nan,
            "prefetched_steps": sum(b["prefetched"] for b in timer.mine),
            "steps": blocks * block_steps,
        },
        "ratio": trl_compare.paired_ratio(our_step, trl_step, confidence=confidence, seed=seed),
        "ratio_steady": (
            trl_compare.paired_ratio(steady, trl_step, confidence=confidence, seed=seed) if block_steps > 2 else None
        ),
        "checks": {
            "idle_checks": timer.idle_checks,
            "discarded_prefetches": timer.discarded,
            "drain_s": timer.drain_s,
        },
    }


# -- report and CLI ----------------------------------------------------------------------------------
def format_report(
    parity: Sequence[dict[str, Any]] | None, timing: dict[str, Any] | None, overlap: dict[str, Any] | None = None
) -> str:
    """The parts as plain-text tables (:func:`benchmarks.trl_compare.format_report`, the tool figures, the blocks)."""
    lines = [trl_compare.format_report(parity, timing)]
    if parity:
        r = parity[0]
        lines.append(
            f"multi-turn batch: same token ids {r['same_token_ids']}, same loss mask {r['same_loss_mask']}, "
            f"TRL ran {r['trl_tool_calls']} tool calls in {r['trl_generate_calls']} generation rounds "
            f"(our rows hold {r['our_tool_results']} tool results, {r['masked_tool_tokens']} masked tool tokens)"
        )
    if timing:
        med = timing["median"]
        lines.append(
            f"median tool calls per episode: TRL {med['trl']['tool_calls']:.3f}, ours {med['ours']['tool_calls']:.3f}"
        )
    if overlap:
        cfg, med, r, st = overlap["config"], overlap["median"], overlap["ratio"], overlap["staleness"]
        lines.append("")
        lines.append(
            f"Overlapped blocks: ours with overlap_rollouts=True (2 threads doing torch work: collection and "
            f"update), TRL synchronous; {cfg['blocks']} block pairs of K={cfg['block_steps']} steps after "
            f"{cfg['warmup_blocks']} warm-up, blocks timed alone, per step = block wall / K"
        )
        lines.append(
            f"{'part':10} {'TRL median':>11} {'our median':>11} {'ours/TRL':>9} {'95% interval':>17} {'pairs':>7}"
        )
        lines.append(
            f"{'overlapped':10} {med['trl']['step_s'] * 1e3:9.1f}ms {med['ours']['step_s'] * 1e3:9.1f}ms "
            f"{r['ratio']:9.3f} [{r['low']:6.3f}, {r['high']:6.3f}] {r['pair_median']:7.3f}"
        )
        steady = overlap["ratio_steady"]
        if steady is not None:
            lines.append(
                f"{'steady':10} {med['trl']['step_s'] * 1e3:9.1f}ms {med['ours']['steady_step_s'] * 1e3:9.1f}ms "
                f"{steady['ratio']:9.3f} [{steady['low']:6.3f}, {steady['high']:6.3f}] {steady['pair_median']:7.3f}"
                "   (ours: steps 2..K-1 of each block)"
            )
        lines.append(
            f"ours per step (median): waiting for the batch {med['ours']['wait_s'] * 1e3:.1f}ms, "
            f"update {med['ours']['update_s'] * 1e3:.1f}ms; staleness mean {st['mean']:.2f} "
            f"(prefetched steps {st['prefetched_steps_mean']:.2f}), max {st['max']:.0f}; "
            f"{st['prefetched_steps']} of {st['steps']} batches prefetched"
        )
        lines.append(
            f"median completion tokens per row: TRL {med['trl']['completion_tokens']:.3f}, "
            f"ours {med['ours']['completion_tokens']:.3f}; TRL step checks with none of ours running: "
            f"{overlap['checks']['idle_checks']}"
        )
    return "\n".join(lines)


def _summary(
    parity: Sequence[dict[str, Any]] | None, timing: dict[str, Any] | None, overlap: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The headline figures, flat (the docs' reproduce page lists the first scalars of a result file)."""
    out: dict[str, Any] = {}
    if parity:
        out["parity_ok"] = all(r["ok"] for r in parity)
        out["parity_max_loss_diff"] = max(r["loss_diff"] for r in parity)
        out["parity_max_grad_norm_diff"] = max(r["grad_norm_diff"] for r in parity)
        out["parity_tool_calls"] = parity[0]["trl_tool_calls"]
    if timing:
        step = timing["ratios"]["step_s"]
        out["step_ratio_ours_over_trl"] = round(step["ratio"], 4)
        out["step_ratio_low"] = round(step["low"], 4)
        out["step_ratio_high"] = round(step["high"], 4)
        out["step_ratio_pair_median"] = round(step["pair_median"], 4)
        for side in ("trl", "ours"):
            for key in ("step_s", "generate_s", "update_s", "tool_calls"):
                out[f"{side}_median_{key}"] = round(timing["median"][side][key], 4)
        out["goal_met"] = step["high"] <= 0.5
    if overlap:
        r = overlap["ratio"]
        out["overlap_step_ratio_ours_over_trl"] = round(r["ratio"], 4)
        out["overlap_step_ratio_low"] = round(r["low"], 4)
        out["overlap_step_ratio_high"] = round(r["high"], 4)
        out["overlap_step_ratio_pair_median"] = round(r["pair_median"], 4)
        out["overlap_trl_median_step_s"] = round(overlap["median"]["trl"]["step_s"], 4)
        out["overlap_ours_median_step_s"] = round(overlap["median"]["ours"]["step_s"], 4)
        out["overlap_ours_steady_step_s"] = round(overlap["median"]["ours"]["steady_step_s"], 4)
        out["overlap_blocks"] = overlap["config"]["blocks"]
        out["overlap_block_steps"] = overlap["config"]["block_steps"]
        out["overlap_staleness_mean"] = round(overlap["staleness"]["mean"], 4)
        out["overlap_staleness_max"] = overlap["staleness"]["max"]
        out["overlap_goal_met"] = r["high"] <= 0.5
        steady = overlap["ratio_steady"]
        if steady is not None:
            out["overlap_steady_ratio_ours_over_trl"] = round(steady["ratio"], 4)
            out["overlap_steady_ratio_low"] = round(steady["low"], 4)
            out["overlap_steady_ratio_high"] = round(steady["high"], 4)
            out["overlap_steady_goal_met"] = steady["high"] <= 0.5
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """``python benchmarks/trl_multiturn.py``: parity, then paired timings; exit 1 if parity fails."""
    parser = argparse.ArgumentParser(prog="python benchmarks/trl_multiturn.py", description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed step pairs (default 5)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed step pairs first (default 1)")
    parser.add_argument("--loss-type", default="grpo", choices=LOSS_TYPES, help="loss type of the timed runs")
    parser.add_argument("--budget", type=int, default=BUDGET, help=f"completion tokens per episode (default {BUDGET})")
    parser.add_argument("--sft-steps", type=int, default=SFT_STEPS, help="fine-tuning steps of the tool model")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument(
        "--overlap-blocks", type=int, default=OVERLAP_BLOCKS, help="timed block pairs, ours with overlap (0: skip)"
    )
    parser.add_argument("--block-steps", type=int, default=BLOCK_STEPS, help="steps per block (K)")
    parser.add_argument("--overlap-warmup", type=int, default=1, help="untimed block pairs first (default 1)")
    parser.add_argument("--skip-parity", action="store_true")
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    import os

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    import torch

    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="trl-multiturn-model-") as tmp:
        model = build_tool_model(tmp, steps=args.sft_steps)
        parity = None if args.skip_parity else parity_check(model_dir=model, budget=args.budget)
        timing = (
            None
            if args.skip_timing
            else time_steps(
                args.repeats, loss_type=args.loss_type, warmup=args.warmup, model_dir=model, budget=args.budget
            )
        )
        overlap = (
            None
            if args.skip_timing or args.overlap_blocks < 1
            else time_overlapped(
                args.overlap_blocks,
                args.block_steps,
                loss_type=args.loss_type,
                warmup=args.overlap_warmup,
                model_dir=model,
                budget=args.budget,
            )
        )
        sft = json.loads((model / "sft.json").read_text())
    print(format_report(parity, timing, overlap))
    if args.json:
        command = "python benchmarks/trl_multiturn.py " + " ".join(sys.argv[1:] if argv is None else argv)
        record = {
            "command": command.strip(),
            **_summary(parity, timing, overlap),
            "sft": sft,
            "wall_s": round(time.perf_counter() - started, 1),
            "parity": parity,
            "timing": timing,
            "overlap": overlap,
        }
        Path(args.json).write_text(json.dumps(record, indent=2) + "\n")
    ok = parity is None or all(r["ok"] for r in parity)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
