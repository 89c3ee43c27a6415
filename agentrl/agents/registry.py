"""Agents by name: what ``agentrl bench --agent NAME --backend NAME`` builds.

Built-in agents are ``oracle``, ``random``, ``react``, ``doctor`` (PatientConsult), ``vision`` (a VLM
game agent), ``coast`` (the adventure games) and ``gui`` (OSWorld desktops); any other agent is named
by its import path ``module:Class``. LLM backends are ``smollm2`` (the embedded
default), ``transformers`` (a local Hugging Face model by path) and ``openai`` (any OpenAI-compatible
server).

>>> spec = AgentSpec("oracle")
>>> builder = spec.build()
>>> builder(seed=0).name
'oracle'
>>> builder.close()
"""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentrl.core.choices import did_you_mean
from agentrl.core.imports import import_object
from agentrl.llm.base import LLMBackend
from agentrl.llm.registry import BACKEND_NAMES, check_backend_options, make_backend

__all__ = ["AGENT_NAMES", "BACKEND_NAMES", "AgentBuilder", "AgentSpec", "check_backend_options", "make_backend"]

AGENT_NAMES = ("oracle", "random", "react", "doctor", "vision", "coast", "gui")
_LLM_AGENTS = frozenset({"react", "doctor", "vision", "gui"})  # coast works without an LLM: only with --backend


def _import_class(path: str) -> type:
    return import_object(path, "agent")  # type: ignore[no-any-return]


@dataclass(frozen=True)
class AgentSpec:
    """A buildable description of an agent.

    Attributes:
        agent: ``"oracle"``, ``"random"``, ``"react"`` or ``"module:Class"``.
        backend: the LLM backend for LLM agents (``react`` defaults to ``smollm2``).
        backend_options: keyword arguments for the backend.
        agent_options: keyword arguments for the agent's constructor.
    """

    agent: str
    backend: str | None = None
    backend_options: Mapping[str, Any] = field(default_factory=dict)
    agent_options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if ":" not in self.agent and self.agent not in AGENT_NAMES:
            raise ValueError(
                f"unknown agent {self.agent!r}; choose from: {', '.join(AGENT_NAMES)}, "
                f"or give an import path 'package.module:Class'{did_you_mean(self.agent, AGENT_NAMES)}"
            )
        if self.backend is not None and self.backend not in BACKEND_NAMES:
            raise ValueError(
                f"unknown backend {self.backend!r}; choose from: {', '.join(BACKEND_NAMES)}"
                f"{did_you_mean(self.backend, BACKEND_NAMES)}"
            )
        if self.backend is not None and self.agent in ("oracle", "random"):
            raise ValueError(f"the {self.agent} agent uses no LLM; drop --backend")
        if self.backend_name is not None:
            check_backend_options(self.backend_name, self.backend_options)  # fail before any episode starts

    @property
    def backend_name(self) -> str | None:
        """The backend actually used (``react`` without one gets the embedded SmolLM2)."""
        if self.backend is None and self.agent in _LLM_AGENTS:
            return "smollm2"
        return self.backend

    def config(self) -> dict[str, Any]:
        """A stable, JSON-serialisable description (it goes into result keys)."""
        config: dict[str, Any] = {"agent": self.agent, "agent_options": _jsonable(self.agent_options)}
        if self.backend_name is not None:
            config["backend"] = self.backend_name
            config["backend_options"] = _jsonable(self.backend_options)
        return config

    def build(self) -> AgentBuilder:
        """A builder that makes fresh agents sharing one backend."""
        return AgentBuilder(self)


class AgentBuilder:
    """Makes agents for a spec: ``builder(seed)`` returns a fresh agent; the backend is built once."""

    def __init__(self, spec: AgentSpec) -> None:
        self.spec = spec
        self._backend: LLMBackend | None = None
        self._lock = threading.Lock()
        self._class = self._resolve_class()

    def _resolve_class(self) -> type:
        if ":" in self.spec.agent:
            return _import_class(self.spec.agent)
        from agentrl.agents.doctor import DoctorAgent
        from agentrl.agents.game_agents import CoastAgent, VisionGameAgent
        from agentrl.agents.gui_agent import GUIAgent
        from agentrl.agents.react import ReActAgent
        from agentrl.agents.simple import OracleAgent, RandomAgent

        agents = {"oracle": OracleAgent, "random": RandomAgent, "react": ReActAgent, "doctor": DoctorAgent,
                  "vision": VisionGameAgent, "coast": CoastAgent, "gui": GUIAgent}
        return agents[self.spec.agent]

    @property
    def backend(self) -> LLMBackend | None:
        """The shared backend (built on first use), or ``None`` for agents without an LLM."""
        name = self.spec.backend_name
        if name is None:
            return None
        with self._lock:
            if self._backend is None:
                self._backend = make_backend(name, self.spec.backend_options)
            return self._backend

    def __call__(self, seed: int | None = None) -> Any:
        """A fresh agent."""
        options = dict(self.spec.agent_options)
        parameters = _parameters(self._class)
        if "seed" in parameters and "seed" not in options:
            options["seed"] = seed
        if "backend" in parameters and self.spec.backend_name is not None:
            options["backend"] = self.backend
        try:
            return self._class(**options)
        except TypeError as exc:
            raise ValueError(
                f"cannot build agent {self.spec.agent!r} with options {sorted(options)}: {exc}; "
                f"its constructor takes: {', '.join(parameters) or 'nothing'}"
            ) from None

    def close(self) -> None:
        """Release the backend; idempotent."""
        with self._lock:
            backend, self._backend = self._backend, None
        if backend is not None:
            backend.close()


def _parameters(cls: type) -> list[str]:
    try:
        return [name for name in inspect.signature(cls).parameters if name not in ("self", "args", "kwargs")]
    except (TypeError, ValueError):
        return []


def _jsonable(options: Mapping[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(dict(sorted(options.items())), default=str))
