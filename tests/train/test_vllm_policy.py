"""VLLMPolicy: the output translation and the error paths everywhere; a real vLLM run on a GPU."""

from __future__ import annotations

import builtins
import importlib
import importlib.util
import math
import sys
import types
from types import SimpleNamespace

import pytest

from agentrl.core.errors import DependencyNotInstalled
from agentrl.llm.base import BackendError, GenerationConfig
from agentrl.train import vllm_policy
from agentrl.train.vllm_policy import VLLMPolicy, _to_generation


def _output(token_ids, logprobs, *, finish_reason="stop", text="hi", prompt=(1, 2, 3), extra=None):
    positions = None
    if logprobs is not None:
        positions = []
        for token, lp in zip(token_ids, logprobs, strict=False):
            entry = {token: SimpleNamespace(logprob=lp, rank=1, decoded_token="x")}
            entry.update(extra or {})
            positions.append(entry)
    completion = SimpleNamespace(
        index=0, text=text, token_ids=list(token_ids), logprobs=positions, finish_reason=finish_reason, stop_reason=None
    )
    return SimpleNamespace(request_id="agentrl-0", prompt_token_ids=list(prompt), outputs=[completion], finished=True)


def test_module_imports_without_vllm():
    # The import above succeeded on this machine; it must not have pulled vLLM in by itself.
    assert vllm_policy.__all__ == ["VLLMPolicy"]
    assert importlib.util.find_spec("vllm") is not None or "vllm" not in sys.modules


def test_to_generation_tokens_logprobs_text():
    # A top-1 entry for another token sits next to the sampled one (logprobs=1 style): ignored.
    out = _output([5, 7, 2], [-0.5, -1.25, -0.01], text="ab", extra={99: SimpleNamespace(logprob=-0.1)})
    gen = _to_generation(out, [1, 2, 3])
    assert gen.token_ids == (5, 7, 2)
    assert gen.logprobs == (-0.5, -1.25, -0.01)
    assert gen.text == "ab"
    assert gen.finish_reason == "stop"
    assert gen.prompt_token_ids == (1, 2, 3)
    assert gen.usage == {"prompt_tokens": 3, "completion_tokens": 3}


@pytest.mark.parametrize(("vllm_reason", "ours"), [("stop", "stop"), ("length", "length"), ("abort", "error")])
def test_to_generation_finish_reasons(vllm_reason, ours):
    assert _to_generation(_output([4], [-1.0], finish_reason=vllm_reason), [1]).finish_reason == ours


def test_to_generation_prompt_falls_back_and_nan_is_minus_inf():
    out = _output([4], [math.nan])
    out.prompt_token_ids = None
    gen = _to_generation(out, [9, 8])
    assert gen.prompt_token_ids == (9, 8)
    assert gen.logprobs == (float("-inf"),)


def test_to_generation_empty_completion():
    gen = _to_generation(_output([], [], finish_reason="length", text=""), [1])
    assert gen.token_ids == () and gen.logprobs == () and gen.finish_reason == "length"


@pytest.mark.parametrize(
    "out",
    [
        _output([4, 5], None),  # no logprobs requested
        _output([4, 5], [-1.0]),  # one short
        SimpleNamespace(outputs=[], prompt_token_ids=[1]),
    ],
)
def test_to_generation_rejects_missing_logprobs(out):
    with pytest.raises(BackendError):
        _to_generation(out, [1])


def test_to_generation_rejects_logprob_of_another_token():
    out = _output([4], [-1.0])
    out.outputs[0].logprobs = [{5: SimpleNamespace(logprob=-0.2)}]
    with pytest.raises(BackendError, match="sampled token 4"):
        _to_generation(out, [1])


def test_missing_vllm_raises_dependency_not_installed(monkeypatch, tmp_path):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "vllm" or name.startswith("vllm."):
            raise ImportError("No module named 'vllm'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "1")  # restored after: the constructor sets it
    monkeypatch.delitem(sys.modules, "vllm", raising=False)
    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(DependencyNotInstalled) as info:
        VLLMPolicy(tmp_path)
    assert "pip install vllm" in str(info.value)
    assert info.value.package == "vllm"


def test_no_cuda_raises_runtime_error(monkeypatch, tmp_path):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "1")
    monkeypatch.setitem(sys.modules, "vllm", types.ModuleType("vllm"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="needs a CUDA GPU"):
        VLLMPolicy(tmp_path)


def test_bad_memory_fraction(tmp_path):
    with pytest.raises(ValueError, match="gpu_memory_utilization"):
        VLLMPolicy(tmp_path, gpu_memory_utilization=0.0)


def _gpu_skip_reason() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "needs a CUDA GPU (torch.cuda.is_available() is False)"
    if importlib.util.find_spec("vllm") is None:
        return "needs vLLM (pip install vllm on the CUDA machine)"
    return None


@pytest.mark.gpu
def test_vllm_generates_and_loads_weights(tmp_path):
    reason = _gpu_skip_reason()
    if reason:
        pytest.skip(reason)
    import asyncio

    import torch
    from safetensors.torch import load_file

    from agentrl.llm.tiny import build_tiny_model

    path = build_tiny_model(tmp_path / "tiny")
    policy = VLLMPolicy(path, gpu_memory_utilization=0.2, enforce_eager=True, max_model_len=256)
    try:
        assert policy.stop_token_ids and policy.tokenizer is not None
        prompt = policy.tokenizer("the agent reads the problem", add_special_tokens=False)["input_ids"]
        greedy = GenerationConfig(max_tokens=12, temperature=0.0)
        before = policy.generate_ids(prompt, greedy)
        assert before.token_ids and len(before.logprobs) == len(before.token_ids)
        assert all(lp <= 0.0 for lp in before.logprobs)
        assert before.finish_reason in ("stop", "length")

        # Concurrent sampled requests through the async API, seeded: reproducible.
        async def many():
            sample = GenerationConfig(max_tokens=8, temperature=1.0, top_p=0.9, seed=3)
            return await asyncio.gather(*(policy.agenerate_ids(prompt, sample) for _ in range(4)))

        outs = asyncio.run(many())
        assert len({o.token_ids for o in outs}) == 1

        # Same weights again: the greedy output must not change; perturbed weights: it must.
        state = {k: v.cuda() for k, v in load_file(str(path / "model.safetensors")).items()}
        policy.load_weights(state)
        assert policy.generate_ids(prompt, greedy).token_ids == before.token_ids
        generator = torch.Generator(device="cpu").manual_seed(0)
        perturbed = {
            k: v
            + 0.5 * torch.randn(v.shape, generator=generator).to(v.device, v.dtype) * v.float().std().clamp(min=0.02)
            for k, v in state.items()
        }
        policy.load_weights(perturbed)
        after = policy.generate_ids(prompt, greedy)
        assert after.token_ids != before.token_ids
        assert policy.stats["weight_updates"] == 2
    finally:
        policy.close()
    with pytest.raises(BackendError):
        policy.generate_ids([1, 2], GenerationConfig())
