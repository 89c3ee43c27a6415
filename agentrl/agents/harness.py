"""An agent harness as a benchmark agent: ``agentrl bench --harness package.module:run_episode``.

A harness (:mod:`agentrl.rollout.harness`) owns its episode loop: ``run_episode(env, client, model)`` resets and
steps the env itself and asks its model through an OpenAI client. :class:`HarnessAgent` hands it one: pointed at
the backend's own server when the backend is an OpenAI-compatible one (``--backend openai --base-url ...``),
else at a local OpenAI-compatible server over the backend (SmolLM2 by default, or ``--backend transformers``),
started once per backend. The bench runner sees ``plays_episodes`` and calls :meth:`HarnessAgent.play` with its
env (reset to the episode's task, every step logged) instead of calling ``act`` turn by turn, so the results are
scored and stored as any agent's.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from agentrl.core.agent import BaseAgent
from agentrl.core.harness import call_harness, load_harness

__all__ = ["HarnessAgent"]

_SERVERS: dict[int, Any] = {}
_SERVERS_LOCK = threading.Lock()


def _endpoint(backend: Any) -> tuple[str, str]:
    """(the API root, the model name) a harness's client should use for ``backend``."""
    base_url = getattr(backend, "base_url", None)
    if base_url and getattr(backend, "model", None):  # an OpenAI-compatible backend: its own server
        return str(base_url), str(backend.model)
    from agentrl.llm.server import serve_model

    with _SERVERS_LOCK:  # one local server per backend, for the life of the process (a daemon thread)
        server = _SERVERS.get(id(backend))
        if server is None:
            server = _SERVERS[id(backend)] = serve_model(backend)
    return str(server.base_url), str(server.model)


class HarnessAgent(BaseAgent):
    """Plays whole episodes with a harness (see the module docstring).

    Args:
        harness: ``package.module:function`` (or the function), ``run_episode(env, client, model)``, sync or async.
        backend: the LLM backend the harness's client reaches.
        seed: unused (a harness samples as its calls ask).

    Attributes:
        usage: the episode's ``prompt_tokens`` and ``completion_tokens``, summed over the ``usage`` its calls got
            back (the bench reports them as any agent's tokens).
    """

    name = "harness"
    plays_episodes = True

    def __init__(self, harness: Any, backend: Any = None, seed: int | None = None) -> None:
        super().__init__()
        self.harness = load_harness(harness)
        if backend is None:
            raise ValueError("a harness needs a model: give --backend (smollm2 by default)")
        self.backend = backend
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0}

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        """Not used: a harness plays whole episodes (:meth:`play`)."""
        raise RuntimeError("a harness plays whole episodes; the bench calls HarnessAgent.play(env)")

    def play(self, env: Any) -> None:
        """Run the harness on ``env`` for one episode; :attr:`usage` counts the tokens its calls reported."""
        base_url, model = _endpoint(self.backend)
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0}
        call_harness(self.harness, env, model, base_url=base_url, on_usage=self._count)

    def _count(self, usage: Mapping[str, Any]) -> None:
        for key in self.usage:
            self.usage[key] += int(usage.get(key, 0) or 0)
