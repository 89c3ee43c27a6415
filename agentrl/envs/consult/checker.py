"""The fact checker: which facts a patient's reply states, and whether it leaks or contradicts the case.

It reads any reply, rule-based or LLM-written, sentence by sentence, against every statement the
patient could make about the case: each fact as the case words it (and in lay words), each topic's
denial, and for topics the case has no fact for, an affirmation ("Yes, I have had a fever."). Then:

* a **leak** is a statement about a topic the doctor did not ask about (the opening complaint aside);
* a **contradiction** is a denial of a symptom the case has a fact for, or an affirmation of a
  symptom it has none for.

A sentence is read exactly when it is one of the case's statements (so a rule-based reply is read
without error), by the topics' keywords and a negation test otherwise ("I've been getting out of
breath a lot" affirms shortness of breath), and by MiniLM similarity when it has no keyword.

Sentences that are a persona's known manner phrases (worry, hesitation, small talk) state no fact
and are skipped. The LLM-backed simulator checks each reply with it and regenerates on failure; the
fidelity script (``python benchmarks/consult_fidelity.py``) measures both simulators with it.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentrl.envs.consult.catalog import TOPICS
from agentrl.envs.consult.matching import keyword_hits
from agentrl.envs.consult.persona import ANXIOUS_PHRASES, CONFESSIONS, HESITANT_OPENERS, TALKATIVE_ASIDES, lay_words
from agentrl.envs.consult.simulator import GREETING, LEAVING, META_REPLY, NOTHING_ELSE, TOO_MANY, UNCLEAR
from agentrl.envs.consult.tasks import PatientView

__all__ = ["CheckResult", "FactChecker", "split_sentences"]

_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_MANNER = {
    s.strip().lower()
    for s in (
        *ANXIOUS_PHRASES,
        *HESITANT_OPENERS,
        *TALKATIVE_ASIDES,
        GREETING,
        LEAVING,
        META_REPLY,
        NOTHING_ELSE,
        TOO_MANY,
        *UNCLEAR,
    )
}


# what a persona puts before a fact: hesitation, "As I said," and confessions (longest first)
_PREFIXES = tuple(
    sorted(
        {p.lower() for p in (*HESITANT_OPENERS, *CONFESSIONS, "As I said,", "to be honest,", "Okay...")},
        key=len,
        reverse=True,
    )
)
_NEGATED = re.compile(
    r"\b(no|not|never|nothing|none|nor|without|haven't|hasn't|don't|doesn't|didn't|isn't|aren't|wasn't|can't|"
    r"haven’t|don’t|didn’t)\b",
    re.IGNORECASE,
)


def _strip_prefixes(sentence: str) -> str:
    text = sentence.strip().lower()
    changed = True
    while changed:
        changed = False
        for prefix in _PREFIXES:
            if text.startswith(prefix):
                text = text[len(prefix) :].strip()
                changed = True
    return text


def split_sentences(text: str) -> list[str]:
    """Sentences of a reply.

    >>> split_sentences("Um, well... I've had a fever. No cough!")
    ['Um, well...', "I've had a fever.", 'No cough!']
    """
    return [s.strip() for s in _SPLIT.split(text) if s and s.strip()]


@dataclass(frozen=True)
class CheckResult:
    """What one reply states.

    Attributes:
        statements: ``(sentence, topic, kind)`` for each sentence read as a statement; ``kind`` is
            ``"fact"``, ``"denial"`` or ``"affirmation"``.
        leaks: topics stated without being asked.
        contradictions: topics stated against the case.
    """

    statements: tuple[tuple[str, str, str], ...]
    leaks: tuple[str, ...]
    contradictions: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """No leak and no contradiction."""
        return not self.leaks and not self.contradictions


class FactChecker:
    """Checks replies against one case's patient view (see the module docstring).

    Args:
        view: the case's patient view.
        embedder: ``embed(texts) -> normalised rows`` (default: the shared MiniLM).
        threshold: the least similarity for a sentence to count as a statement.
    """

    def __init__(self, view: PatientView, embedder: Any = None, threshold: float = 0.75) -> None:
        if embedder is None:
            from agentrl.envs.consult.matching import shared_embedder

            embedder = shared_embedder()
        self.view = view
        self.embedder = embedder
        self.threshold = threshold
        statements: list[tuple[str, str, str]] = []  # (text, topic, kind)
        for topic, fact in view.facts.items():
            texts = {fact.text, lay_words(fact.text)}
            texts |= {part for text in list(texts) for part in split_sentences(text)}  # a fact may be two sentences
            statements.extend((text, topic, "fact") for text in sorted(texts))
        for topic, spec in TOPICS.items():
            if topic == "chief_complaint":
                continue
            statements.append((view.denial(topic), topic, "denial"))
            if topic not in view.facts and spec.category == "symptom":
                statements.append((f"Yes, I have had {spec.label}.", topic, "affirmation"))
        self._statements = statements
        self._exact = {_strip_prefixes(text): (topic, kind) for text, topic, kind in reversed(statements)}
        self._matrix = embedder.embed([text for text, _, _ in statements])
        self._complaint = f"I've come in because of {view.complaint}.".lower()
        #: what the patient's opening words already named ("a pain in my tummy": abdominal pain)
        self.opening_topics = frozenset(topic for _, topic in keyword_hits(view.complaint)) | {"chief_complaint"}

    def read(self, reply: str) -> list[tuple[str, str, str]]:
        """``(sentence, topic, kind)`` for each statement of ``reply``.

        A sentence that is one of the case's statements (after a persona's "As I said," or
        confession) is read exactly; otherwise each topic its keywords name is a statement, a
        denial when the sentence is negated; a sentence with no keyword is read as its most
        similar statement when the similarity clears ``threshold``.
        """
        sentences = [s for s in split_sentences(reply) if s.lower() not in _MANNER]
        found: list[tuple[str, str, str]] = []
        fuzzy: list[str] = []
        for sentence in sentences:
            exact = self._exact.get(_strip_prefixes(sentence))
            if exact is not None:
                found.append((sentence, *exact))
                continue
            if self._complaint in sentence.lower():
                continue
            hits = keyword_hits(sentence)
            if hits:
                negated = _NEGATED.search(sentence) is not None
                for _, topic in hits:
                    if negated:
                        found.append((sentence, topic, "denial"))
                    else:
                        found.append((sentence, topic, "fact" if topic in self.view.facts else "affirmation"))
            else:
                fuzzy.append(sentence)
        if fuzzy:
            sims = self.embedder.embed(fuzzy) @ self._matrix.T
            for sentence, row in zip(fuzzy, sims, strict=True):
                best = int(np.argmax(row))
                if row[best] >= self.threshold:
                    _, topic, kind = self._statements[best]
                    found.append((sentence, topic, kind))
        return found

    def check(self, reply: str, asked: Collection[str]) -> CheckResult:
        """Leaks and contradictions of ``reply`` given the topics asked so far."""
        statements = self.read(reply)
        asked = set(asked) | self.opening_topics
        leaks, contradictions = [], []
        for _, topic, kind in statements:
            if topic not in asked:
                leaks.append(topic)
            fact = self.view.facts.get(topic)
            if TOPICS[topic].category not in ("symptom", "hpi"):
                continue  # "I've never smoked" is a fact, not a denial: polarity is compared for symptoms only
            if kind == "denial" and fact is not None and fact.present and TOPICS[topic].category == "symptom":
                contradictions.append(topic)
            if kind == "affirmation" and fact is None and TOPICS[topic].category == "symptom":
                contradictions.append(topic)
        return CheckResult(tuple(statements), tuple(dict.fromkeys(leaks)), tuple(dict.fromkeys(contradictions)))
