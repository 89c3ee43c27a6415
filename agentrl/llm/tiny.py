"""Tiny local chat models for tests and examples: a real tokenizer and architecture, random weights.

:func:`build_tiny_model` writes a Hugging Face model folder (safetensors weights, a byte-level BPE
tokenizer with the family's special tokens and chat template, a generation config) that
:class:`~agentrl.llm.transformers_backend.TransformersBackend` and any trainer load
like a real checkpoint. The weights are random, so the text it writes is gibberish; what matters
is that every code path (chat templates, batching, KV cache, logprobs, stop handling) runs for real
in well under a second, with no download.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import Any, Literal

from agentrl.core.errors import DependencyNotInstalled

__all__ = ["TINY_CHAT_TEMPLATES", "build_tiny_model", "tiny_corpus"]

Family = Literal["qwen2", "llama"]

#: Chat templates of the two families, in the shape their real checkpoints use.
TINY_CHAT_TEMPLATES: dict[str, str] = {
    "qwen2": (
        "{% for message in messages %}"
        "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
        "{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
    ),
    "llama": (
        "{{ bos_token }}"
        "{% for message in messages %}"
        "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] + '<|eot_id|>' }}"
        "{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
    ),
}

# Special tokens per family: (all special tokens, bos, eos, pad, end-of-turn ids for generation_config).
_SPECIALS: dict[str, dict[str, Any]] = {
    "qwen2": {
        "tokens": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        "bos": None,
        "eos": "<|im_end|>",
        "pad": "<|endoftext|>",
        "stop": ["<|im_end|>", "<|endoftext|>"],
    },
    "llama": {
        "tokens": ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
        "bos": "<|begin_of_text|>",
        "eos": "<|eot_id|>",
        "pad": "<|end_of_text|>",
        "stop": ["<|eot_id|>", "<|end_of_text|>"],
    },
}

# Qwen2's pre-tokenizer split (words, single digits, punctuation runs, newlines), as transformers has it.
_QWEN2_PRETOKENIZE_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

# Bump when the output of build_tiny_model changes, so stale folders are rebuilt.
_FORMAT_VERSION = 2
_MARKER = "agentrl_tiny.json"


def is_built(target: Path, marker_name: str, wanted: dict[str, Any], what: str) -> bool:
    """Whether ``target`` already holds the folder these arguments build (its marker file says so).

    Raises:
        FileExistsError: ``target`` holds something else (never clobbered: it may be a real checkpoint).
    """
    marker = target / marker_name
    if marker.is_file():
        try:
            if json.loads(marker.read_text()) == wanted:
                return True
        except (OSError, ValueError):
            pass  # a corrupt marker: rebuild
    if target.exists() and not marker.is_file() and any(target.iterdir()):
        raise FileExistsError(f"{target} exists and is not {what} built by agentrl; choose an empty path")
    return False


def write_model_folder(target: Path, marker_name: str, wanted: dict[str, Any], *parts: Any) -> Path:
    """Save ``parts`` (a model, its tokenizer or processor: anything with ``save_pretrained``) into ``target``.

    Atomic: written into a temporary sibling, with the marker file, then renamed into place, so an
    interrupted build never leaves a half-written model behind.
    """
    import transformers

    transformers.utils.logging.disable_progress_bar()  # "Writing model shards" would clutter logs
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for part in parts:
            if hasattr(part, "config") and hasattr(part, "state_dict"):
                part.save_pretrained(tmp, safe_serialization=True)
            else:
                part.save_pretrained(tmp)
        (tmp / marker_name).write_text(json.dumps(wanted))
        # mkdtemp made the folder private; give it (and the files) the usual umask permissions.
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o777 & ~umask)
        for file in tmp.iterdir():
            file.chmod(0o666 & ~umask)
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def tiny_corpus() -> list[str]:
    """A small deterministic corpus (English, Python, arithmetic; a few hundred lines) to train the BPE on."""
    subjects = ["the agent", "a student", "the model", "my friend", "the robot", "our team", "the teacher", "a child"]
    verbs = ["reads", "writes", "solves", "checks", "explains", "builds", "finds", "answers"]
    objects = [
        "the problem",
        "a short program",
        "the answer",
        "every question",
        "a long story",
        "the final result",
        "some numbers",
        "the code",
    ]
    endings = ["quickly.", "with care.", "before lunch.", "step by step.", "again.", "in Python.", "today.", "well."]
    lines: list[str] = []
    for i, subject in enumerate(subjects):
        for j, verb in enumerate(verbs):
            obj = objects[(i + j) % len(objects)]
            end = endings[(i * 3 + j) % len(endings)]
            lines.append(f"{subject.capitalize()} {verb} {obj} {end}")
    names = ["total", "count", "value", "result", "items", "answer", "x", "y"]
    for i, name in enumerate(names):
        other = names[(i + 3) % len(names)]
        lines += [
            f"def compute_{name}({other}):",
            f"    {name} = {other} * {i + 2} + {i}",
            f"    return {name}",
            f"for i in range({i + 3}):",
            f"    print(i, {name}[i])",
            f"if {name} > {i * 7}:",
            f"    {other} = [{i}, {i + 1}, {i + 2}]",
            f"import math; print(math.sqrt({i * i + 1}))",
        ]
    for a in range(1, 13):
        b = (a * 7) % 11 + 1
        lines += [
            f"{a} + {b} = {a + b}",
            f"{a} * {b} = {a * b}",
            f"What is {a} times {b}? The answer is {a * b}.",
            f"If x + {a} = {a + b}, then x = {b}.",
        ]
    lines += [
        "The capital of France is Paris.",
        "Hello! How can I help you today?",
        "Let's think step by step.",
        "The final answer is \\boxed{42}.",
        "Search for the document, then read it and answer the question.",
        "SELECT name, age FROM users WHERE age > 30 ORDER BY name;",
    ]
    return lines


def train_tiny_tokenizer(vocab_size: int, special_tokens: Sequence[str], *, qwen2_style: bool) -> Any:
    """A byte-level BPE ``tokenizers.Tokenizer`` trained on :func:`tiny_corpus` (every string round-trips).

    ``qwen2_style`` gives Qwen2's own normaliser and pre-tokenizer: transformers rebuilds a
    Qwen2Tokenizer with exactly these next to a qwen2 config whatever ``tokenizer.json`` says, so
    anything else would make ``AutoTokenizer`` and ``tokenizer.json`` disagree on the ids. Otherwise
    the plain byte-level pre-tokenizer (Llama's tiny family).

    Raises:
        DependencyNotInstalled: the ``tokenizers`` package is missing.
    """
    try:
        from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise DependencyNotInstalled("tokenizers", extra="llm") from exc
    tokenizer = Tokenizer(models.BPE())
    if qwen2_style:
        tokenizer.normalizer = normalizers.NFC()
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(_QWEN2_PRETOKENIZE_REGEX), behavior="isolated", invert=False),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
    else:
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(special_tokens),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(tiny_corpus(), trainer=trainer)
    return tokenizer


def build_tiny_model(
    path: str | PathLike[str],
    *,
    family: Family = "qwen2",
    vocab_size: int = 512,
    seed: int = 0,
) -> Path:
    r"""Write a tiny randomly initialised chat model (about 0.2M parameters) to ``path`` and return it.

    The folder holds ``model.safetensors``, ``config.json``, ``generation_config.json`` and a
    byte-level BPE tokenizer (``tokenizer.json``) trained on :func:`tiny_corpus`, with the family's
    special tokens and chat template: ChatML (``<|im_start|>role\n...<|im_end|>``) for ``"qwen2"``,
    Llama-3 headers (``<|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>``) for ``"llama"``.

    Idempotent: a folder already built with the same arguments is reused as is. The folder is
    written atomically (a temporary sibling renamed into place), so an interrupted build never
    leaves a half-written model behind.

    Args:
        path: the folder to create.
        family: the architecture and chat format to imitate.
        vocab_size: the BPE vocabulary size (at least 256 + the special tokens).
        seed: seeds the weight initialisation (the tokenizer is deterministic anyway).

    Returns:
        The folder, as a :class:`~pathlib.Path`.

    Raises:
        DependencyNotInstalled: torch, transformers or tokenizers is missing.
        ValueError: an unknown family or a vocabulary too small for the byte alphabet.
    """
    if family not in _SPECIALS:
        raise ValueError(f"unknown family {family!r}; expected one of {sorted(_SPECIALS)}")
    specials = _SPECIALS[family]
    if vocab_size < 256 + len(specials["tokens"]):
        raise ValueError(f"vocab_size must be at least {256 + len(specials['tokens'])} (the byte alphabet + specials)")
    try:
        import torch
        from transformers import (
            AutoModelForCausalLM,
            GenerationConfig,
            LlamaConfig,
            PreTrainedTokenizerFast,
            Qwen2Config,
        )
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise DependencyNotInstalled("torch/transformers/tokenizers", extra="llm") from exc

    target = Path(path)
    wanted = {"version": _FORMAT_VERSION, "family": family, "vocab_size": vocab_size, "seed": seed}
    if is_built(target, _MARKER, wanted, "a tiny model"):
        return target

    tokenizer = train_tiny_tokenizer(vocab_size, specials["tokens"], qwen2_style=family == "qwen2")
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=specials["bos"],
        eos_token=specials["eos"],
        pad_token=specials["pad"],
        chat_template=TINY_CHAT_TEMPLATES[family],
    )
    real_vocab = tokenizer.get_vocab_size()
    stop_ids = [tokenizer.token_to_id(t) for t in specials["stop"]]
    pad_id = tokenizer.token_to_id(specials["pad"])
    bos_id = tokenizer.token_to_id(specials["bos"]) if specials["bos"] else None

    common: dict[str, Any] = {
        "vocab_size": real_vocab,
        "hidden_size": 64,
        "intermediate_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 4096,
        "tie_word_embeddings": True,
        # Larger than the usual 0.02 so that the logits are not all but tied: greedy decoding of a
        # random model then depends on the prompt, and batching noise (1e-7) cannot flip an argmax.
        "initializer_range": 0.2,
        "eos_token_id": stop_ids[0],
        "pad_token_id": pad_id,
        "bos_token_id": bos_id,
    }
    config = Qwen2Config(**common) if family == "qwen2" else LlamaConfig(**common)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.generation_config = GenerationConfig(eos_token_id=stop_ids, pad_token_id=pad_id, bos_token_id=bos_id)

    return write_model_folder(target, _MARKER, wanted, model, fast)
