"""Patient personas and the affect unit that speaks the disclosed facts in a persona's voice.

A :class:`Persona` is drawn from personality (talkative or terse, anxious or calm, hesitant, hiding
a sensitive fact until asked twice) and social background (occupation, home, schooling; a patient
without medical training uses lay words). :func:`speak` turns the facts the fact unit chose into one
reply; it adds manner (hesitation, worry, small talk), never content: no sentence it adds states a
fact about the patient, so the persona cannot leak what the doctor did not ask for.

>>> import numpy as np
>>> persona = Persona(verbosity="terse", mood="calm", hesitant=False, hides_sensitive=False,
...                   lay_vocabulary=True, patience=5, occupation="teacher", living_situation="I live alone.",
...                   education="university")
>>> speak(persona, ["I have hypertension."], np.random.default_rng(0))
'I have high blood pressure.'
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from agentrl.envs.consult.catalog import LAY_TERMS

__all__ = ["ANXIOUS_PHRASES", "HESITANT_OPENERS", "Persona", "TALKATIVE_ASIDES", "draw_persona", "lay_words", "speak"]

OCCUPATIONS = (
    "teacher",
    "bus driver",
    "nurse",
    "accountant",
    "shop assistant",
    "electrician",
    "chef",
    "software developer",
    "cleaner",
    "farmer",
    "hairdresser",
    "postal worker",
    "student",
    "retired engineer",
    "retired nurse",
    "builder",
    "office manager",
    "warehouse worker",
    "taxi driver",
    "librarian",
)
LIVING = (
    "I live with my partner.",
    "I live alone.",
    "I live with my husband and our two children.",
    "I live with my wife.",
    "I share a flat with two friends.",
    "I live with my daughter and her family.",
)
EDUCATION = ("school", "college", "university")

#: manner only: an anxious patient's worry (states no fact)
ANXIOUS_PHRASES = (
    "I'm really worried it's something serious.",
    "Is it something bad, doctor?",
    "I've been so anxious about this.",
    "I keep thinking the worst.",
)
#: manner only: how a hesitant patient starts
HESITANT_OPENERS = ("Um, well...", "I'm not sure, but", "Hmm, let me think...", "Well, er,")
#: manner only: a talkative patient's small talk (states no fact about their health)
TALKATIVE_ASIDES = (
    "Sorry, I do go on a bit.",
    "My family told me I should have come in sooner.",
    "I did try looking things up online, but it just confused me.",
    "It's been a strange couple of weeks, to be honest.",
    "The waiting room was very busy today.",
)
#: what a patient hiding a sensitive fact says the first time they are asked
DEFLECTIONS = ("I'd rather not talk about that.", "Do we have to go into that?", "I don't really see why that matters.")
#: what they say when they finally tell
CONFESSIONS = ("Okay... to be honest,", "Alright, since you ask again,", "I didn't want to say before, but")


@dataclass(frozen=True)
class Persona:
    """Who the patient is, beyond the facts of the case.

    Attributes:
        verbosity: ``"talkative"`` (adds small talk), ``"average"`` or ``"terse"`` (bare facts).
        mood: ``"anxious"`` (voices worry) or ``"calm"``.
        hesitant: starts replies with hesitation.
        hides_sensitive: withholds a sensitive fact the first time it is asked about.
        lay_vocabulary: speaks in lay words (no medical terms from :data:`~agentrl.envs.consult.catalog.LAY_TERMS`).
        patience: how many unproductive doctor turns the patient tolerates before leaving.
        occupation: the patient's job (their answer to "what do you do for work").
        living_situation: their answer to "who do you live with".
        education: ``"school"``, ``"college"`` or ``"university"``.
    """

    verbosity: str
    mood: str
    hesitant: bool
    hides_sensitive: bool
    lay_vocabulary: bool
    patience: int
    occupation: str
    living_situation: str
    education: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable copy."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Persona:
        """The inverse of :meth:`to_dict`."""
        return cls(**{key: data[key] for key in cls.__dataclass_fields__})

    def describe(self) -> str:
        """The persona in words, for an LLM-backed simulator's prompt."""
        traits = [
            {
                "talkative": "talkative, adds small talk",
                "terse": "terse, answers in as few words as possible",
                "average": "answers plainly",
            }[self.verbosity],
            "anxious about what is wrong" if self.mood == "anxious" else "calm",
        ]
        if self.hesitant:
            traits.append("hesitant, often unsure how to put things")
        if self.hides_sensitive:
            traits.append("embarrassed about sensitive topics: refuses the first time they are asked")
        if self.lay_vocabulary:
            traits.append("uses everyday words, never medical terms")
        return "; ".join(traits)


def draw_persona(rng: np.random.Generator, age: int) -> Persona:
    """Draw a persona with ``rng`` (the case generator's); retired jobs only from 60."""
    verbosity = str(rng.choice(("talkative", "average", "terse"), p=(0.3, 0.45, 0.25)))
    education = str(rng.choice(EDUCATION, p=(0.4, 0.3, 0.3)))
    jobs = [job for job in OCCUPATIONS if ("retired" in job) == (age >= 65) and (job != "student" or age < 30)]
    occupation = str(rng.choice(jobs))
    return Persona(
        verbosity=verbosity,
        mood=str(rng.choice(("anxious", "calm"), p=(0.35, 0.65))),
        hesitant=bool(rng.random() < 0.3),
        hides_sensitive=bool(rng.random() < 0.4),
        # only a patient with medical training keeps medical words
        lay_vocabulary="nurse" not in occupation,
        patience=int(rng.integers(4, 8)),
        occupation=occupation,
        living_situation=str(rng.choice(LIVING)),
        education=education,
    )


_LAY_PATTERNS = sorted(LAY_TERMS, key=len, reverse=True)
_LAY_RE = re.compile(r"(?<![A-Za-z])(" + "|".join(re.escape(term) for term in _LAY_PATTERNS) + r")(?![A-Za-z])", re.I)
_LAY_LOOKUP = {term.lower(): lay for term, lay in LAY_TERMS.items()}


def lay_words(text: str) -> str:
    """Replace the medical terms of :data:`LAY_TERMS` by lay words.

    >>> lay_words("Dyspnoea on exertion and hypertension.")
    'Trouble breathing on exertion and high blood pressure.'
    """

    def swap(match: re.Match[str]) -> str:
        lay = _LAY_LOOKUP[match.group(1).lower()]
        return lay[0].upper() + lay[1:] if match.group(1)[0].isupper() else lay

    return _LAY_RE.sub(swap, text)


def speak(
    persona: Persona,
    sentences: Sequence[str],
    rng: np.random.Generator,
    *,
    first: bool = False,
) -> str:
    """Say ``sentences`` (the facts to disclose, already chosen) in the persona's voice.

    ``first``: the first reply of the consultation, where a talkative patient always makes small
    talk and an anxious one always voices worry (later replies do so at random), so that every
    consultation shows the persona.
    """
    said = [lay_words(s) if persona.lay_vocabulary else s for s in sentences if s]
    parts: list[str] = []
    if persona.hesitant and persona.verbosity != "terse" and rng.random() < 0.6:
        parts.append(str(rng.choice(HESITANT_OPENERS)))
    parts.extend(said)
    if persona.verbosity == "talkative" and (first or rng.random() < 0.6):
        parts.append(str(rng.choice(TALKATIVE_ASIDES)))
    if persona.mood == "anxious" and persona.verbosity != "terse" and (first or rng.random() < 0.4):
        parts.append(str(rng.choice(ANXIOUS_PHRASES)))
    return " ".join(parts)
