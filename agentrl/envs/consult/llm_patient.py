"""The LLM-backed patient: an LLM speaks, the rule-based units keep it honest.

Each doctor turn goes through the rule-based patient's fact unit and termination gate first (which
topics were asked, what may be said, whether patience ran out). The LLM is then prompted with the
persona, the case's facts and the conversation, and its reply is checked by the
:class:`~agentrl.envs.consult.checker.FactChecker`: a reply that states a fact the doctor did not
ask for (a leak), contradicts the case, does not answer what was asked, or is empty is regenerated
(with another seed), up to ``max_attempts`` times; after that the rule-based reply is used and the
turn is marked ``fallback``.
Works with any backend of ``agentrl.agents`` (the embedded SmolLM2, a local model, or any
OpenAI-compatible server).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agentrl.envs.consult.catalog import TOPICS
from agentrl.envs.consult.checker import FactChecker, split_sentences
from agentrl.envs.consult.persona import speak
from agentrl.envs.consult.rubric import backend_model_name
from agentrl.envs.consult.simulator import PatientReply, RuleBasedPatient
from agentrl.envs.consult.tasks import PatientView
from agentrl.llm.base import BackendError, ChatMessage, GenerationConfig

__all__ = ["PROMPT_VERSION", "LLMPatient"]

#: recorded with the simulator; bump when the prompt changes
PROMPT_VERSION = "consult-patient-v1"


class LLMPatient:
    """A patient simulator whose words come from an LLM (see the module docstring).

    Args:
        backend: any :class:`~agentrl.llm.base.LLMBackend`.
        rules: the rule-based patient used for matching, patience and fallback.
        max_attempts: generations tried per turn before falling back.
        temperature: sampling temperature (each attempt has its own seed, drawn from the episode's rng).
        max_tokens: the most tokens per reply.
        checker_threshold: the fact checker's similarity threshold.
    """

    name = "llm"

    def __init__(
        self,
        backend: Any,
        *,
        rules: RuleBasedPatient | None = None,
        max_attempts: int = 3,
        temperature: float = 0.7,
        max_tokens: int = 80,
        checker_threshold: float = 0.75,
    ) -> None:
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
        self.backend = backend
        self.model = backend_model_name(backend)
        self.rules = rules or RuleBasedPatient()
        self.max_attempts = max_attempts
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.checker_threshold = checker_threshold
        self.prompt_version = PROMPT_VERSION
        self._checker: FactChecker | None = None
        self._history: list[ChatMessage] = []
        self._asked: set[str] = set()
        self._rng = np.random.default_rng(0)
        self.stats = {
            "turns": 0,
            "attempts": 0,
            "fallbacks": 0,
            "rejected_leak": 0,
            "rejected_contradiction": 0,
            "rejected_unanswered": 0,
        }

    @property
    def patience_left(self) -> int:
        """Unproductive turns the patient still tolerates (kept by the rule-based gate)."""
        return self.rules.patience_left

    def reset(self, view: PatientView, rng: np.random.Generator) -> str:
        """Start a consultation: the system prompt holds the persona and every fact of the case."""
        self._rng = rng
        opening = self.rules.reset(view, np.random.default_rng(int(rng.integers(2**63 - 1))))
        self._checker = FactChecker(view, embedder=self.rules.matcher.embedder, threshold=self.checker_threshold)
        self._asked = set()
        facts = "\n".join(f"- about {TOPICS[t].label}: {fact.text}" for t, fact in view.facts.items())
        sex = "woman" if view.sex == "female" else "man"
        system = (
            f"You are role-playing a patient, {view.name}, a {view.age}-year-old {sex}, at a doctor's appointment. "
            f"Personality: {view.persona.describe()}.\n"
            "Rules: answer ONLY what the doctor just asked, in one to three short sentences, in the first person. "
            "Use only the facts below; for anything not listed say you have not had it. Never volunteer a fact the "
            "doctor did not ask about. You do not know your diagnosis.\n"
            f"Facts:\n{facts}"
        )
        self._history = [{"role": "system", "content": system}, {"role": "assistant", "content": opening}]
        return opening

    def respond(self, utterance: str) -> PatientReply:
        """One reply: the LLM's if it passes the fact checker, else the rule-based one."""
        if self._checker is None:
            raise RuntimeError("call reset(view, rng) before respond()")
        self.stats["turns"] += 1
        if not isinstance(utterance, str) or not utterance.strip():
            return self.rules.respond(utterance)
        sentences, record = self.rules.plan_reply(utterance)
        self._asked |= set(record.answered)
        self._asked |= {"chief_complaint"}
        fallback_text = speak(self.rules.view.persona, sentences, self._rng)
        self._history.append({"role": "user", "content": utterance})
        notes: list[str] = []
        text = ""
        attempts = 0
        if not record.answered or record.withheld or record.left:
            # nothing to answer, a withheld fact, or leaving: the rules say exactly what happens
            text = fallback_text
        else:
            while attempts < self.max_attempts:
                attempts += 1
                self.stats["attempts"] += 1
                candidate = self._generate()
                problem = self._problem(candidate, record.answered)
                if problem is None:
                    text = candidate
                    break
                notes.append(problem)
        fallback = not text
        if fallback:
            text = fallback_text
            self.stats["fallbacks"] += 1
        self._history.append({"role": "assistant", "content": text})
        return PatientReply(
            text=text,
            asked=record.asked,
            answered=record.answered,
            disclosed=record.disclosed if fallback or not record.answered else self._disclosed(text, record.disclosed),
            withheld=record.withheld,
            productive=record.productive,
            left=record.left,
            attempts=attempts,
            fallback=fallback and attempts > 0,
            notes=tuple(notes),
        )

    def _generate(self) -> str:
        config = GenerationConfig(
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            seed=int(self._rng.integers(2**31 - 1)),
            stop=("\nDoctor", "Doctor:"),
        )
        try:
            text = self.backend.generate(self._history, config).text.strip()
            return " ".join(split_sentences(text)[:3])  # "one to three short sentences"
        except BackendError as exc:
            return f"\x00backend error: {exc}"

    def _problem(self, reply: str, answered: tuple[str, ...]) -> str | None:
        assert self._checker is not None
        if not reply or reply.startswith("\x00"):
            return "empty reply" if not reply else reply[1:]
        result = self._checker.check(reply, self._asked)
        if result.leaks:
            self.stats["rejected_leak"] += 1
            return f"leaked {', '.join(result.leaks)}"
        if result.contradictions:
            self.stats["rejected_contradiction"] += 1
            return f"contradicted {', '.join(result.contradictions)}"
        stated = {topic for _, topic, _ in result.statements}
        missing = [topic for topic in answered if topic not in stated]
        if missing:
            self.stats["rejected_unanswered"] += 1
            return f"did not answer {', '.join(missing)}"
        return None

    def _disclosed(self, text: str, planned: tuple[str, ...]) -> tuple[str, ...]:
        assert self._checker is not None
        stated = {topic for _, topic, kind in self._checker.read(text) if kind == "fact"}
        return tuple(t for t in planned if t in stated)
