"""Patient cases: atomic facts, test results and a rubric, generated from condition templates.

A :class:`Case` is everything the consultation needs: who the patient is (age, sex, persona), one
:class:`Fact` per topic they can talk about, the abnormal test results, and the rubric the doctor is
scored by. The simulator only ever sees :meth:`Case.patient_view`, which has no diagnosis, no
differential and no rubric, so no prompt can make it say them.

Cases are consistent by construction: a topic has exactly one fact, a symptom either has a fact or is
denied, and history topics the condition does not set get a neutral default.

>>> bank = build_case_bank(cases_per_condition=1)
>>> case = bank[0]
>>> case.id, case.diagnosis in case.names
('gen-0/acute_appendicitis/0', True)
>>> "diagnosis" in case.patient_view().to_dict()
False
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentrl.envs.consult.catalog import TESTS, TOPICS
from agentrl.envs.consult.conditions import CONDITIONS, Condition
from agentrl.envs.consult.persona import Persona, draw_persona
from agentrl.envs.consult.rubric import Criterion, build_rubric

__all__ = ["Case", "Fact", "PatientView", "build_case_bank", "generate_case", "oracle_turns"]

FEMALE_NAMES = (
    "Maria",
    "Aisha",
    "Grace",
    "Elena",
    "Priya",
    "Hannah",
    "Sofia",
    "Mei",
    "Fatima",
    "Olivia",
    "Rosa",
    "Ingrid",
)
MALE_NAMES = ("James", "Omar", "Lucas", "Daniel", "Ravi", "Tom", "Mateo", "Kenji", "Samuel", "Ivan", "Kwame", "Peter")
SURNAMES = (
    "Okafor",
    "Novak",
    "Garcia",
    "Smith",
    "Khan",
    "Larsen",
    "Rossi",
    "Chen",
    "Dubois",
    "Mensah",
    "Patel",
    "Murphy",
)

#: neutral answers for history topics a condition does not set (a fact of the case all the same)
DEFAULT_HISTORY: dict[str, tuple[str, ...]] = {
    "past_medical_history": ("I'm generally healthy.", "Nothing major, just the odd cold."),
    "surgeries": ("I've never had an operation.", "I had my tonsils out as a child."),
    "medications": ("I don't take any regular medicines.", "Just a multivitamin most days."),
    "allergies": ("No allergies that I know of.",),
    "smoking": ("I've never smoked.", "I gave up smoking over twenty years ago."),
    "alcohol": ("I have the odd glass of wine at the weekend.", "I don't drink alcohol."),
    "recreational_drugs": ("No, I don't take any drugs.",),
    "travel": ("I haven't been away recently.",),
    "sexual_history": ("I've been with the same partner for years.", "I'm not in a relationship at the moment."),
    "sick_contacts": ("Nobody around me has been ill.",),
    "family_history": ("My father had high blood pressure.", "Nothing runs in my family that I know of."),
}


@dataclass(frozen=True)
class Fact:
    """One atomic fact: what a patient says when asked about ``topic``.

    Attributes:
        topic: the :data:`~agentrl.envs.consult.catalog.TOPICS` key.
        text: the first-person sentence the patient says.
        present: ``True`` when it states something the patient has; ``False`` for a denial or normal answer.
        relevant: comes from the condition (counts towards ``facts_elicited``), not a neutral default.
        sensitive: a hiding persona withholds it until asked twice.
    """

    topic: str
    text: str
    present: bool = True
    relevant: bool = True
    sensitive: bool = False


@dataclass(frozen=True)
class PatientView:
    """What a patient simulator may know: the facts and the persona, never the diagnosis or the rubric."""

    name: str
    age: int
    sex: str
    complaint: str
    persona: Persona
    facts: Mapping[str, Fact]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable copy."""
        return {
            "name": self.name,
            "age": self.age,
            "sex": self.sex,
            "complaint": self.complaint,
            "persona": self.persona.to_dict(),
            "facts": {k: vars(f) | {} for k, f in self.facts.items()},
        }

    def fact_for(self, topic: str) -> Fact | None:
        """The fact of ``topic``, or ``None`` when the patient would deny it."""
        return self.facts.get(topic)

    def denial(self, topic: str) -> str:
        """What the patient says about a topic with no fact."""
        if topic == "menstrual_history" and self.sex == "male":
            return "That doesn't apply to me, doctor."
        if topic == "chief_complaint":
            return f"I've come in because of {self.complaint}."
        return TOPICS[topic].denial


@dataclass(frozen=True)
class Case:
    """One patient case (see the module docstring). ``to_dict``/``from_dict`` round-trip through JSON."""

    id: str
    condition: str
    diagnosis: str
    synonyms: tuple[str, ...]
    specialty: str
    name: str
    age: int
    sex: str
    complaint: str
    persona: Persona
    facts: Mapping[str, Fact]
    tests: Mapping[str, str]
    key_questions: tuple[str, ...]
    red_flags: tuple[str, ...]
    key_tests: tuple[str, ...]
    plan: tuple[tuple[str, ...], ...]
    harmful: tuple[tuple[str, ...], ...]
    differential: tuple[str, ...]
    rubric: tuple[Criterion, ...]
    source: str = "generated"
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        """The diagnosis and its accepted synonyms."""
        return (self.diagnosis, *self.synonyms)

    def patient_view(self) -> PatientView:
        """The part of the case a patient simulator may see."""
        return PatientView(self.name, self.age, self.sex, self.complaint, self.persona, self.facts)

    def opening(self) -> str:
        """The patient's first words."""
        return f"Hello, doctor. I've come in because of {self.complaint}."

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable copy."""
        return {
            "id": self.id,
            "condition": self.condition,
            "diagnosis": self.diagnosis,
            "synonyms": list(self.synonyms),
            "specialty": self.specialty,
            "name": self.name,
            "age": self.age,
            "sex": self.sex,
            "complaint": self.complaint,
            "persona": self.persona.to_dict(),
            "facts": {topic: vars(fact) | {} for topic, fact in self.facts.items()},
            "tests": dict(self.tests),
            "key_questions": list(self.key_questions),
            "red_flags": list(self.red_flags),
            "key_tests": list(self.key_tests),
            "plan": [list(i) for i in self.plan],
            "harmful": [list(i) for i in self.harmful],
            "differential": list(self.differential),
            "rubric": [c.to_dict() for c in self.rubric],
            "source": self.source,
            "extra": dict(self.extra),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Case:
        """The inverse of :meth:`to_dict`."""
        return cls(
            id=data["id"],
            condition=data["condition"],
            diagnosis=data["diagnosis"],
            synonyms=tuple(data.get("synonyms", ())),
            specialty=data.get("specialty", ""),
            name=data["name"],
            age=int(data["age"]),
            sex=data["sex"],
            complaint=data["complaint"],
            persona=Persona.from_dict(data["persona"]),
            facts={topic: Fact(**fact) for topic, fact in data["facts"].items()},
            tests=dict(data.get("tests", {})),
            key_questions=tuple(data.get("key_questions", ())),
            red_flags=tuple(data.get("red_flags", ())),
            key_tests=tuple(data.get("key_tests", ())),
            plan=tuple(tuple(i) for i in data.get("plan", ())),
            harmful=tuple(tuple(i) for i in data.get("harmful", ())),
            differential=tuple(data.get("differential", ())),
            rubric=tuple(Criterion.from_dict(c) for c in data["rubric"]),
            source=data.get("source", "generated"),
            extra=dict(data.get("extra", {})),
        )


def _pick(rng: np.random.Generator, options: Sequence[str]) -> str:
    return str(options[int(rng.integers(len(options)))])


def generate_case(condition: Condition, index: int, bank_seed: int = 0) -> Case:
    """The ``index``-th case of ``condition``; the same arguments always give the same case."""
    rng = np.random.default_rng([bank_seed, zlib.crc32(condition.key.encode()), index])
    sex = _pick(rng, condition.sexes)
    age = int(rng.integers(condition.ages[0], condition.ages[1] + 1))
    persona = draw_persona(rng, age)
    first = _pick(rng, FEMALE_NAMES if sex == "female" else MALE_NAMES)
    name = f"{first} {_pick(rng, SURNAMES)}"
    facts: dict[str, Fact] = {}
    for section in (condition.hpi, condition.symptoms):
        for topic, options in section.items():
            facts[topic] = Fact(topic, _pick(rng, options), sensitive=topic in condition.sensitive)
    for topic, options in condition.optional_symptoms.items():
        included = rng.random() < 0.5
        text = _pick(rng, options)
        if included:
            facts[topic] = Fact(topic, text, sensitive=topic in condition.sensitive)
    for topic, options in condition.history.items():
        facts[topic] = Fact(topic, _pick(rng, options), sensitive=topic in condition.sensitive)
    for topic, options in DEFAULT_HISTORY.items():
        if topic not in facts:
            facts[topic] = Fact(topic, _pick(rng, options), present=False, relevant=False)
    facts.setdefault(
        "occupation",
        Fact(
            "occupation",
            f"I work as a {persona.occupation}."
            if "retired" not in persona.occupation and persona.occupation != "student"
            else f"I'm a {persona.occupation}.",
            present=False,
            relevant=False,
        ),
    )
    facts.setdefault(
        "living_situation", Fact("living_situation", persona.living_situation, present=False, relevant=False)
    )
    if sex == "female":
        periods = "My periods are regular." if age < 50 else "I went through the menopause a few years ago."
        facts.setdefault("menstrual_history", Fact("menstrual_history", periods, present=False, relevant=False))
    rubric = build_rubric(
        diagnosis=condition.name,
        key_questions=condition.key_questions,
        red_flags=condition.red_flags,
        key_tests=condition.key_tests,
        plan=condition.plan,
        harmful=condition.harmful,
        tests=condition.tests,
    )
    return Case(
        id=f"gen-{bank_seed}/{condition.key}/{index}",
        condition=condition.key,
        diagnosis=condition.name,
        synonyms=condition.synonyms,
        specialty=condition.specialty,
        name=name,
        age=age,
        sex=sex,
        complaint=condition.complaint,
        persona=persona,
        facts=facts,
        tests=dict(condition.tests),
        key_questions=condition.key_questions,
        red_flags=condition.red_flags,
        key_tests=condition.key_tests,
        plan=condition.plan,
        harmful=condition.harmful,
        differential=condition.differential,
        rubric=rubric,
    )


def build_case_bank(
    cases_per_condition: int = 4,
    *,
    bank_seed: int = 0,
    conditions: Sequence[str] | None = None,
    specialties: Sequence[str] | None = None,
) -> list[Case]:
    """Generate the case bank: ``cases_per_condition`` cases of each condition, sorted by id.

    Args:
        cases_per_condition: cases per condition (4 gives 168 cases over 42 conditions).
        bank_seed: another seed gives another bank of the same conditions.
        conditions: only these condition keys.
        specialties: only conditions of these specialties.
    """
    if cases_per_condition < 1:
        raise ValueError(f"cases_per_condition must be >= 1, got {cases_per_condition}")
    chosen = list(CONDITIONS.values())
    if conditions is not None:
        from agentrl.core.choices import did_you_mean

        unknown = [key for key in conditions if key not in CONDITIONS]
        if unknown:
            raise ValueError(f"unknown condition {unknown[0]!r}{did_you_mean(unknown[0], list(CONDITIONS))}")
        chosen = [CONDITIONS[key] for key in conditions]
    if specialties is not None:
        known = sorted({c.specialty for c in CONDITIONS.values()})
        unknown = [s for s in specialties if s not in known]
        if unknown:
            raise ValueError(f"unknown specialty {unknown[0]!r}; choose from: {', '.join(known)}")
        chosen = [c for c in chosen if c.specialty in specialties]
    cases = [generate_case(c, i, bank_seed) for c in chosen for i in range(cases_per_condition)]
    return sorted(cases, key=lambda case: case.id)


def _question(topic: str) -> str:
    return TOPICS[topic].questions[0]


def oracle_turns(case: Case, per_turn: int = 3) -> tuple[str, ...]:
    """The privileged doctor: key questions and red flags (``per_turn`` a turn), key tests, then the diagnosis.

    A sensitive topic that the persona hides is asked again in the next question turn, so every key
    fact is elicited. The last turn explains the diagnosis in lay words, with empathy and a safe plan.
    """
    queue = list(dict.fromkeys((*case.key_questions, *case.red_flags)))
    asked: set[str] = set()
    turns: list[str] = []
    while queue:
        batch, queue = queue[:per_turn], queue[per_turn:]
        again = [t for t in batch if t in asked]
        hidden = [
            t
            for t in batch
            if t not in asked and case.persona.hides_sensitive and t in case.facts and case.facts[t].sensitive
        ]
        asked.update(batch)
        queue = hidden + queue
        opener = "I'm sorry to hear you're feeling unwell. " if not turns else ""
        reassure = "I know it can be awkward, but it really helps me to know. " if again else ""
        turns.append(opener + reassure + " ".join(_question(t) for t in batch))
    if case.key_tests:
        turns.append("\n".join(f"REQUEST TEST: {TESTS[key].name}" for key in case.key_tests))
    plan = "; ".join(idea[0] for idea in case.plan)
    turns.append(
        "Thank you for telling me all this; I know it has been a worrying time. From what you have told me "
        "and from your results, I can explain what is going on and we will look after you together.\n"
        f"DIAGNOSIS: {case.diagnosis}\nPLAN: {plan}"
    )
    return tuple(turns)
