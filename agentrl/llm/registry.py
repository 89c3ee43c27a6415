"""LLM backends by name (llm layer): ``smollm2``, ``transformers`` and ``openai``.

Environments that need a model (the PatientConsult LLM patient, an LLM judge) build one here, never
through the agent registry above them; :mod:`agentrl.agents.registry` re-exports these names.

>>> sorted(BACKEND_NAMES)
['openai', 'smollm2', 'transformers']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentrl.core.choices import did_you_mean
from agentrl.llm.base import LLMBackend

__all__ = ["BACKEND_NAMES", "check_backend_options", "make_backend"]

BACKEND_NAMES = ("smollm2", "transformers", "openai")


def check_backend_options(name: str, options: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` naming the missing flags when a backend lacks a required option.

    >>> check_backend_options("openai", {"model": "m"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the openai backend needs --base-url URL and --model NAME ...
    """
    if name == "transformers" and "model_path" not in options:
        raise ValueError("the transformers backend needs a model directory: --model-path DIR")
    if name == "openai" and any(key not in options for key in ("base_url", "model")):
        raise ValueError(
            "the openai backend needs --base-url URL and --model NAME "
            "(for example --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen2.5-7B-Instruct)"
        )


def make_backend(name: str, options: Mapping[str, Any] | None = None) -> LLMBackend:
    """Build an LLM backend by name.

    Args:
        name: ``"smollm2"``, ``"transformers"`` (needs ``model_path``) or ``"openai"`` (needs
            ``base_url`` and ``model``).
        options: keyword arguments for the backend's constructor.
    """
    options = dict(options or {})
    if name == "smollm2":
        from agentrl.llm.smollm2 import smollm2_backend

        return smollm2_backend(**options)
    check_backend_options(name, options)
    if name == "transformers":
        from agentrl.llm.transformers_backend import TransformersBackend

        path = options.pop("model_path")
        from agentrl.llm.vlm_backend import TransformersVLMBackend, is_vlm_checkpoint

        if is_vlm_checkpoint(path):  # a VLM checkpoint: the same backend name, images understood
            return TransformersVLMBackend(path, **options)
        return TransformersBackend(path, **options)
    if name == "openai":
        from agentrl.llm.openai_compatible import OpenAICompatibleBackend

        return OpenAICompatibleBackend(options.pop("base_url"), options.pop("model"), **options)
    choices = ", ".join(BACKEND_NAMES)
    raise ValueError(f"unknown backend {name!r}; choose from: {choices}{did_you_mean(name, BACKEND_NAMES)}")
