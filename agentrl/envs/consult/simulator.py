"""Patient simulators: the protocol, and the rule-based patient (the default).

The rule-based patient has three units (after Baichuan-M2's patient simulator):

* the **fact unit** (:class:`~agentrl.envs.consult.matching.TopicMatcher`) finds the topics a doctor's
  utterance asks about; only the facts of those topics are disclosed, each one sentence of the case,
  and a topic the case has no fact for is denied: so the patient can neither leak nor contradict;
* the **affect unit** (:func:`~agentrl.envs.consult.persona.speak`) says them in the persona's voice,
  and a hiding persona withholds a sensitive fact the first time it is asked about;
* the **termination gate** counts unproductive turns (nothing asked that the patient can answer,
  repeats, a flood of questions, questions about the consultation itself) against the persona's
  patience; when it runs out the patient leaves.

The simulator only holds :class:`~agentrl.envs.consult.tasks.PatientView`: it never knows the
diagnosis, the differential or the rubric.

>>> import numpy as np
>>> from agentrl.envs.consult.tasks import build_case_bank
>>> case = build_case_bank(1, conditions=["community_acquired_pneumonia"])[0]
>>> patient = RuleBasedPatient(semantic=False)
>>> patient.reset(case.patient_view(), np.random.default_rng(0))
"Hello, doctor. I've come in because of a bad cough and a fever."
>>> reply = patient.respond("Are you bringing up any phlegm?")
>>> reply.disclosed, reply.left
(('sputum',), False)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from agentrl.envs.consult.matching import TopicMatcher
from agentrl.envs.consult.persona import CONFESSIONS, DEFLECTIONS, speak
from agentrl.envs.consult.tasks import PatientView

__all__ = ["PatientReply", "PatientSimulator", "RuleBasedPatient", "describe_simulator"]

UNCLEAR = ("I'm not sure what you mean, doctor.", "Sorry, could you ask that another way?", "I don't follow, sorry.")
META_REPLY = "I was hoping you could tell me that, doctor. That's why I came in."
TOO_MANY = "That's a lot of questions at once, doctor. Could we go one at a time?"
LEAVING = "I'm sorry, doctor, I don't think this is getting anywhere. I'm going to go home."
NOTHING_ELSE = "Nothing else comes to mind."
GREETING = "Hello, doctor."


@dataclass(frozen=True)
class PatientReply:
    """One patient turn.

    Attributes:
        text: what the patient says.
        asked: topics the doctor's utterance asked about (as the fact unit understood it).
        answered: the asked topics the patient answered (disclosed or denied), in order.
        disclosed: topics whose fact of the case was said.
        withheld: sensitive topics held back this turn.
        productive: the turn moved the consultation on (else it cost patience).
        left: the patient's patience ran out; the consultation is over.
        attempts: generations tried (LLM-backed simulators).
        fallback: an LLM-backed simulator gave up on the LLM and used the rule-based reply.
        notes: why replies were rejected (LLM-backed simulators).
    """

    text: str
    asked: tuple[str, ...] = ()
    answered: tuple[str, ...] = ()
    disclosed: tuple[str, ...] = ()
    withheld: tuple[str, ...] = ()
    productive: bool = True
    left: bool = False
    attempts: int = 0
    fallback: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)


@runtime_checkable
class PatientSimulator(Protocol):
    """A simulated patient: ``reset`` with a case's patient view, then one ``respond`` per doctor turn."""

    name: str

    def reset(self, view: PatientView, rng: np.random.Generator) -> str:
        """Start a consultation; returns the patient's opening words. Draws only from ``rng``."""
        ...

    def respond(self, utterance: str) -> PatientReply:
        """The patient's reply to one doctor utterance."""
        ...

    @property
    def patience_left(self) -> int:
        """Unproductive turns the patient still tolerates."""
        ...


class RuleBasedPatient:
    """The deterministic rule-based patient (see the module docstring).

    Args:
        matcher: the fact unit's topic matcher (default: keywords + MiniLM).
        semantic: with the default matcher, use MiniLM for sentences without keywords.
        max_topics_per_turn: the most topics answered in one turn; more is a flood of questions.
    """

    name = "rule"

    def __init__(
        self, matcher: TopicMatcher | None = None, *, semantic: bool = True, max_topics_per_turn: int = 3
    ) -> None:
        if max_topics_per_turn < 1:
            raise ValueError(f"max_topics_per_turn must be >= 1, got {max_topics_per_turn}")
        self.matcher = matcher or TopicMatcher(semantic=semantic)
        self.max_topics_per_turn = max_topics_per_turn
        self._view: PatientView | None = None
        self._rng = np.random.default_rng(0)
        self._asked: dict[str, int] = {}
        self._answered: set[str] = set()
        self._withheld: set[str] = set()
        self._patience = 0
        self._greeted = False
        self._open_asked = False
        self._spoken = False

    @property
    def view(self) -> PatientView:
        """The case's patient view (after ``reset``)."""
        if self._view is None:
            raise RuntimeError("call reset(view, rng) before respond()")
        return self._view

    @property
    def patience_left(self) -> int:
        """Unproductive turns the patient still tolerates."""
        return self._patience

    @property
    def asked_counts(self) -> Mapping[str, int]:
        """How many times each topic was asked about."""
        return dict(self._asked)

    def reset(self, view: PatientView, rng: np.random.Generator) -> str:
        """Start a consultation with a fresh memory and full patience."""
        self._view = view
        self._rng = rng
        self._asked = {}
        self._answered = set()
        self._withheld = set()
        self._patience = view.persona.patience
        self._greeted = False
        self._open_asked = False
        self._spoken = False
        return f"Hello, doctor. I've come in because of {view.complaint}."

    def plan_reply(self, utterance: str) -> tuple[list[str], PatientReply]:
        """The fact unit and termination gate: the sentences to say and the reply's record.

        LLM-backed simulators use this to know what may be said; :meth:`respond` speaks it.
        """
        view = self.view
        match = self.matcher.match(utterance)
        sentences: list[str] = []
        answered: list[str] = []
        disclosed: list[str] = []
        withheld: list[str] = []
        productive = False
        if match.meta:
            sentences.append(META_REPLY)
        topics = list(match.topics)
        flood = len(topics) > self.max_topics_per_turn
        for topic in topics[: self.max_topics_per_turn]:
            count = self._asked.get(topic, 0) + 1
            self._asked[topic] = count
            fact = view.fact_for(topic)
            if fact is not None and fact.sensitive and view.persona.hides_sensitive and count == 1:
                sentences.append(str(self._rng.choice(DEFLECTIONS)))
                withheld.append(topic)
                self._withheld.add(topic)
                productive = True
                continue
            text = fact.text if fact is not None else view.denial(topic)
            if topic in self._withheld:
                text = f"{self._rng.choice(CONFESSIONS)} {text[0].lower()}{text[1:]}"
                self._withheld.discard(topic)
            elif topic in self._answered:
                text = f"As I said, {text[0].lower()}{text[1:]}"
            else:
                productive = True
            sentences.append(text)
            answered.append(topic)
            self._answered.add(topic)
            if fact is not None:
                disclosed.append(topic)
        if not topics and not match.meta:
            if match.greeting and not self._greeted:
                sentences.append(GREETING)
                productive = True
            elif match.open_question and not self._open_asked:
                sentences.append(NOTHING_ELSE)
                self._open_asked = True
                productive = True
            else:
                sentences.append(str(self._rng.choice(UNCLEAR)))
        if match.greeting:
            self._greeted = True
        if flood:
            sentences.append(TOO_MANY)
        if not productive or flood or match.meta:
            self._patience -= 1
        left = self._patience <= 0
        if left:
            sentences.append(LEAVING)
        record = PatientReply(
            text="",
            asked=tuple(topics),
            answered=tuple(answered),
            disclosed=tuple(disclosed),
            withheld=tuple(withheld),
            productive=productive and not flood and not match.meta,
            left=left,
        )
        return sentences, record

    def respond(self, utterance: str) -> PatientReply:
        """Answer one doctor utterance (see the module docstring)."""
        if not isinstance(utterance, str) or not utterance.strip():
            self._patience -= 1
            left = self._patience <= 0
            text = "Sorry, doctor, did you say something?" + (f" {LEAVING}" if left else "")
            return PatientReply(text=text, productive=False, left=left)
        first = not self._spoken
        sentences, record = self.plan_reply(utterance)
        text = speak(self.view.persona, sentences, self._rng, first=first)
        self._spoken = True
        return PatientReply(**{**vars(record), "text": text})


def describe_simulator(simulator: Any) -> dict[str, Any]:
    """What to record about a simulator in results: its name and, for LLM ones, the model."""
    return {
        "simulator": getattr(simulator, "name", type(simulator).__name__),
        "model": getattr(simulator, "model", None),
    }
