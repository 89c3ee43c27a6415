"""``DoctorAgent``: the reference doctor for ``AgentRL/PatientConsult-v1`` over any LLM backend.

A :class:`~agentrl.agents.react.ReActAgent` with a clinician's instructions (a focused history, red
flags, a few tests, then a plain-words conclusion) and a conclusion deadline: when the turn budget is
nearly spent, the observation carries a note asking for ``DIAGNOSIS:`` and ``PLAN:`` now, so that a
weak model still ends the consultation instead of being truncated with nothing; if its last turn still
has no ``DIAGNOSIS:`` line, the model is asked for just the name, which is appended. A turn that contains
neither a question, a test nor a diagnosis is sent as it is: the env answers it (the patient is
puzzled), which is the signal an RL trainer needs.

>>> from agentrl.llm.base import Generation
>>> class Scripted:  # a stand-in backend
...     name = "scripted"
...     def generate(self, messages, config):
...         return Generation("When did it start?")
...     def count_tokens(self, messages):
...         return sum(len(m["content"]) // 4 for m in messages)
>>> import gymnasium as gym, agentrl
>>> env = gym.make("AgentRL/PatientConsult-v1", semantic=False)
>>> agent = DoctorAgent(Scripted())
>>> agent.bind(env)
>>> observation, info = env.reset(seed=0)
>>> agent.reset(info)
>>> agent.act(observation, info)
'When did it start?'
>>> env.close()
"""

from __future__ import annotations

import asyncio
from typing import Any

from agentrl.agents.react import ReActAgent
from agentrl.envs.consult.actions import ConsultActionSet
from agentrl.llm.base import ChatMessage, GenerationConfig, LLMBackend

__all__ = ["DOCTOR_INSTRUCTIONS", "DoctorAgent"]

#: the env's own parser decides whether a turn concludes (a DIAGNOSIS: line with a diagnosis)
_ACTIONS = ConsultActionSet()

DOCTOR_INSTRUCTIONS = (
    "How to consult: greet the patient kindly; ask one or two short questions per turn about when it started, "
    "what it feels like, what makes it better or worse, related symptoms, medicines, past illnesses, smoking, "
    "alcohol and family history; ask about dangerous features; order the examinations and tests that would "
    "confirm or rule out what you suspect (REQUEST TEST lines); then explain your conclusion in plain words and "
    "end with the lines 'DIAGNOSIS: ...' and 'PLAN: ...'. Never prescribe anything unsafe."
)


class DoctorAgent(ReActAgent):
    """The reference doctor (see the module docstring).

    Args:
        backend: any LLM backend (the embedded SmolLM2, a local model, an OpenAI-compatible server).
        conclude_when_turns_left: from this many turns left, the observation asks for a conclusion.
        **kwargs: the :class:`ReActAgent` settings (``max_tokens``, ``temperature``, ``seed``...).
    """

    name = "doctor"

    def __init__(self, backend: LLMBackend, *, conclude_when_turns_left: int = 2, **kwargs: Any) -> None:
        kwargs.setdefault("max_tokens", 160)
        extra = kwargs.pop("extra_instructions", "")
        super().__init__(backend, extra_instructions=f"{DOCTOR_INSTRUCTIONS}\n{extra}".strip(), **kwargs)
        if conclude_when_turns_left < 1:
            raise ValueError(f"conclude_when_turns_left must be >= 1, got {conclude_when_turns_left}")
        self.conclude_when_turns_left = conclude_when_turns_left
        #: last turns where the model gave no diagnosis and was asked for just the name
        self.forced_conclusions = 0

    def _note(self, observation: Any, info: dict[str, Any]) -> Any:
        left = info.get("turns_left")
        if isinstance(left, int) and 0 < left <= self.conclude_when_turns_left:
            return (
                f"{observation}\n[note] {left} turn{'s' if left != 1 else ''} left: explain your conclusion now and "
                "end with 'DIAGNOSIS: ...' and 'PLAN: ...'."
            )
        return observation

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        """The next doctor turn."""
        turn = super().act(self._note(observation, info), info)
        return self._ensure_conclusion(turn, info)

    async def aact(self, observation: Any, info: dict[str, Any]) -> str:
        """The next doctor turn, without blocking."""
        turn = await super().aact(self._note(observation, info), info)
        return await asyncio.to_thread(self._ensure_conclusion, turn, info)

    def _ensure_conclusion(self, turn: str, info: dict[str, Any]) -> str:
        """On the last turn, a reply without ``DIAGNOSIS:`` gets one: the model is asked for just the name.

        A small model that rambles would otherwise be truncated with nothing to score.
        """
        parsed = _ACTIONS.parse(turn)
        if info.get("turns_left") != 1 or getattr(parsed, "kind", None) == "diagnosis":
            return turn
        heard = "\n".join(m["content"][-400:] for m in self.messages if m["role"] == "user")[-2000:]
        ask: list[ChatMessage] = [
            {"role": "system", "content": "You are a doctor. Answer with the name of one diagnosis, nothing else."},
            {"role": "user", "content": f"{heard}\n\nThe most likely diagnosis is:"},
        ]
        reply = self.backend.generate(ask, GenerationConfig(max_tokens=16, temperature=0.0, seed=self.seed))
        name = " ".join(reply.text.strip().splitlines()[0].split()[:8]).strip(" .:") if reply.text.strip() else ""
        self.forced_conclusions += 1
        return f"{turn.rstrip()}\nDIAGNOSIS: {name or 'unclear'}\nPLAN: review and follow-up"
