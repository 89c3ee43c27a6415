"""``ReActAgent``: the generic LLM agent for every AgentRL text env.

It reads what the env offers an LLM (``env.unwrapped.system_prompt``, the action set's tool
schemas, ``metadata["stop_sequences"]``), keeps the conversation as chat messages, and before each
turn trims the history to a token budget: the system prompt and the task stay, the oldest turns go
first, and a note says that turns were left out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agentrl.agents.base import BaseAgent
from agentrl.llm.base import ChatMessage, Generation, GenerationConfig, LLMBackend

__all__ = ["OMITTED_NOTE", "ReActAgent"]

OMITTED_NOTE = "[{count} earlier messages were left out to fit the context window]"


class ReActAgent(BaseAgent):
    r"""Think-act-observe with any :class:`~agentrl.llm.base.LLMBackend`.

    Args:
        backend: the LLM (shared between agents: backends batch concurrent requests).
        max_tokens: the most tokens per turn.
        temperature: 0 for greedy decoding.
        top_p: nucleus sampling mass.
        history_token_budget: the most prompt tokens per request; older turns are dropped to fit.
        seed: base seed; turn ``t`` of episode ``e`` samples with a seed derived from it.
        extra_instructions: appended to the env's system prompt.

    Attributes:
        messages: the conversation of the current episode, untrimmed.
        generations: the backend's :class:`Generation` of each turn (exact token ids, logprobs).
        usage: ``{"prompt_tokens": ..., "completion_tokens": ...}`` for the current episode.

    >>> from agentrl.llm.base import Generation
    >>> class Echo:  # a stand-in backend that always answers 42
    ...     name = "echo"
    ...     def generate(self, messages, config):
    ...         return Generation("The answer is \\boxed{42}.", usage={"prompt_tokens": 9, "completion_tokens": 7})
    ...     def count_tokens(self, messages):
    ...         return sum(len(m["content"]) // 4 for m in messages)
    >>> import gymnasium as gym, agentrl
    >>> env = gym.make("AgentRL/TIRMath-v0")
    >>> agent = ReActAgent(Echo())
    >>> agent.bind(env)
    >>> observation, info = env.reset(seed=0)
    >>> agent.reset(info)
    >>> agent.act(observation, info)
    'The answer is \\boxed{42}.'
    >>> agent.usage, [m["role"] for m in agent.messages]
    ({'prompt_tokens': 9, 'completion_tokens': 7}, ['system', 'user', 'assistant'])
    >>> env.close()
    """

    name = "react"

    def __init__(
        self,
        backend: LLMBackend,
        *,
        max_tokens: int = 384,
        temperature: float = 0.0,
        top_p: float = 1.0,
        history_token_budget: int = 3072,
        seed: int | None = None,
        extra_instructions: str = "",
    ) -> None:
        super().__init__()
        if max_tokens < 1 or history_token_budget < 1:
            raise ValueError("max_tokens and history_token_budget must be >= 1")
        self.backend = backend
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.history_token_budget = history_token_budget
        self.seed = seed
        self.extra_instructions = extra_instructions
        self.system_prompt = ""
        self.stop: tuple[str, ...] = ()
        self.messages: list[ChatMessage] = []
        self.generations: list[Generation] = []
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0}
        self._episode = -1

    def config(self) -> dict[str, Any]:
        """The settings that change behaviour (for result files)."""
        return {
            "agent": self.name,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "history_token_budget": self.history_token_budget,
            "seed": self.seed,
        }

    def bind(self, env: Any) -> None:
        """Read the env's system prompt, tool schemas and stop sequences."""
        super().bind(env)
        self.system_prompt = system_prompt_for(env, self.extra_instructions)
        self.stop = tuple(env.unwrapped.metadata.get("stop_sequences", ()) or ())

    def reset(self, info: dict[str, Any]) -> None:
        """Start a new conversation."""
        self._episode += 1
        self.messages = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        self.generations = []
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0}

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        """Ask the backend for the next turn."""
        messages, config = self._prepare(observation)
        return self._record(self.backend.generate(messages, config))

    async def aact(self, observation: Any, info: dict[str, Any]) -> str:
        """Ask the backend for the next turn without blocking (backends batch concurrent calls)."""
        messages, config = self._prepare(observation)
        agenerate = getattr(self.backend, "agenerate", None)
        if agenerate is None:
            import asyncio

            generation = await asyncio.to_thread(self.backend.generate, messages, config)
        else:
            generation = await agenerate(messages, config)
        return self._record(generation)

    # -- internals -------------------------------------------------------------------------
    def _prepare(self, observation: Any) -> tuple[list[ChatMessage], GenerationConfig]:
        self.messages.append({"role": "user", "content": str(observation)})
        seed = None if self.seed is None else (self.seed * 1_000_003 + self._episode * 1_009 + len(self.generations))
        config = GenerationConfig(
            max_tokens=self.max_tokens, temperature=self.temperature, top_p=self.top_p, stop=self.stop, seed=seed
        )
        return self.trimmed_messages(), config

    def _record(self, generation: Generation) -> str:
        self.generations.append(generation)
        for key in self.usage:
            self.usage[key] += int(generation.usage.get(key, 0))
        self.messages.append({"role": "assistant", "content": generation.text})
        return generation.text

    def trimmed_messages(self) -> list[ChatMessage]:
        """The conversation cut to ``history_token_budget``: system, task and latest turn kept.

        Whole exchanges (an assistant turn and the observation after it) are dropped, oldest first,
        so roles keep alternating as strict chat templates require; the task message then says how
        many messages were left out.
        """
        messages = list(self.messages)
        count = self.backend.count_tokens
        if count(messages) + self.max_tokens <= self.history_token_budget:
            return messages
        head = 2 if messages and messages[0]["role"] == "system" else 1
        if len(messages) <= head + 1:
            return messages  # nothing to drop: the task alone is over budget
        pinned, middle, last = messages[:head], messages[head:-1], messages[-1]
        dropped = 0
        while len(middle) > 1:
            middle, dropped = middle[2:], dropped + 2
            candidate = [*_with_note(pinned, dropped), *middle, last]
            if count(candidate) + self.max_tokens <= self.history_token_budget:
                return candidate
        return [*_with_note(pinned, dropped), *middle, last]


def _with_note(pinned: list[ChatMessage], dropped: int) -> list[ChatMessage]:
    task = pinned[-1]
    note = OMITTED_NOTE.format(count=dropped)
    return [*pinned[:-1], {"role": task["role"], "content": f"{task['content']}\n\n{note}"}]


def system_prompt_for(env: Any, extra_instructions: str = "") -> str:
    """The system message the reference agent plays ``env`` with.

    The env's own ``system_prompt``, then its action set's tools described, then ``extra_instructions``: what
    other front ends (the verifiers taskset) send too, so that their scores match ``agentrl bench``.

    >>> import gymnasium as gym
    >>> env = gym.make("AgentRL/Letter-v0")
    >>> system_prompt_for(env) == str(env.unwrapped.system_prompt).strip()
    True
    >>> env.close()
    """
    base = env.unwrapped
    prompt = str(getattr(base, "system_prompt", "") or "")
    action_set = getattr(base, "action_set", None)
    schemas = action_set.tool_schemas() if action_set is not None else []
    parts = [prompt.strip(), _describe_tools(schemas), extra_instructions.strip()]
    return "\n\n".join(part for part in parts if part)


def _describe_tools(schemas: Sequence[dict[str, Any]]) -> str:
    if not schemas:
        return ""
    lines = ["Tools (use them through the action format above):"]
    for schema in schemas:
        function = schema.get("function", schema)
        parameters = function.get("parameters", {}).get("properties", {})
        lines.append(f"- {function.get('name')}({', '.join(parameters)}): {function.get('description', '')}")
    return "\n".join(lines) if len(lines) > 1 else json.dumps(list(schemas))
