"""Procedural 1-4 hop questions over the generated encyclopedia, with answers true by construction.

Kinds (difficulty = hops):

* ``"single"`` (1): one fact of one entity, "In what year was X born?";
* ``"bridge2"``, ``"bridge3"``, ``"bridge4"`` (2-4): a chain of functional relations from a named
  entity, "What river flows through the city where the spouse of the founder of the X Company was
  born?"; only the first entity is named, so each hop needs its own search;
* ``"comparison"`` (2): "Who was born earlier, A or B?" with distinct years; the answer is a name.

A draw is rejected (and the next one taken from the same generator) when a chain revisits an entity,
or when, for bridge questions, an accepted answer already occurs in the first entity's article, so
a question is a pure function of its id ``"search/<kind>/<seed>"`` and the corpus parameters.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Sequence

import numpy as np

from agentrl.core.choices import check_choice
from agentrl.core.errors import AgentRLError, UnknownTask
from agentrl.core.task import Task
from agentrl.envs.search.corpus import Corpus, Entity, build_corpus, display_name

__all__ = ["HOPS", "ID_PREFIX", "KINDS", "ProceduralSearchSource", "generate_question", "parse_task_id"]

ID_PREFIX = "search"
KINDS: tuple[str, ...] = ("single", "bridge2", "comparison", "bridge3", "bridge4")
HOPS: dict[str, int] = {"single": 1, "bridge2": 2, "comparison": 2, "bridge3": 3, "bridge4": 4}
_ID_PATTERN = re.compile(r"^search/(?P<kind>[a-z0-9]+)/(?P<seed>\d+)$")
_MAX_TRIES = 500

# entity-valued relations: kind -> relation -> (target kind, noun phrase template around the inner phrase)
_LINKS: dict[str, dict[str, tuple[str, str]]] = {
    "person": {"birthplace": ("city", "the city where {} was born"),
               "employer": ("org", "the organisation that employed {}"),
               "spouse": ("person", "the spouse of {}")},
    "city": {"mayor": ("person", "the mayor of {}")},
    "org": {"founder": ("person", "the founder of {}"),
            "headquarters": ("city", "the city where {} is headquartered")},
    "event": {"location": ("city", "the city where {} took place"),
              "organiser": ("org", "the organisation that organised {}")},
}  # fmt: skip
# final questions: kind -> relation -> question template around the subject phrase
_ASK: dict[str, dict[str, str]] = {
    "person": {"born": "In what year was {} born?", "birthplace": "In which city was {} born?",
               "occupation": "What was the occupation of {}?", "employer": "Which organisation employed {}?",
               "spouse": "Who was the spouse of {}?", "notable_work": "What is the best-known work of {}?"},
    "city": {"country": "In which country is {}?", "founded": "In what year was {} founded?",
             "river": "What river flows through {}?", "population": "What is the population of {}?",
             "mayor": "Who is the mayor of {}?"},
    "org": {"founded": "In what year was {} founded?", "founder": "Who founded {}?",
            "headquarters": "In which city is {} headquartered?", "industry": "In which industry does {} operate?"},
    "event": {"year": "In what year did {} take place?", "location": "In which city did {} take place?",
              "organiser": "Which organisation organised {}?"},
}  # fmt: skip
# the word an oracle search adds to the entity name
_QUERY_WORD = {"born": "born", "birthplace": "born", "occupation": "occupation", "employer": "employer",
               "spouse": "married", "notable_work": "best known work", "country": "country", "founded": "founded",
               "river": "river", "population": "population", "mayor": "mayor", "founder": "founder",
               "headquarters": "headquarters", "industry": "industry", "year": "held", "location": "held",
               "organiser": "organised"}  # fmt: skip
_COMPARE = {"person": ("born", "Who was born earlier, {} or {}?"),
            "city": ("founded", "Which city was founded earlier, {} or {}?"),
            "org": ("founded", "Which organisation was founded earlier, {} or {}?"),
            "event": ("year", "Which took place earlier, {} or {}?")}  # fmt: skip


class _Reject(AgentRLError):
    """The draw does not make a good question; draw again."""


def _normalize(text: str) -> str:
    text = "".join(c for c in text.lower() if c not in string.punctuation)
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def _answers(corpus: Corpus, entity: Entity, relation: str) -> list[str]:
    value = entity.facts[relation]
    if relation == "river":
        return [value, f"{value} River", f"the {value} River"]
    if relation == "population":
        return [value, value.replace(",", "")]
    if isinstance(value, str) and value in corpus.entities:
        target = corpus.entities[value]
        return [value] if display_name(target) == value else [value, display_name(target)]
    return [str(value)]


def _pick(rng: random.Random, options: Sequence[str]) -> str:
    if not options:
        raise _Reject
    return options[rng.randrange(len(options))]


def _chain(corpus: Corpus, rng: random.Random, hops: int) -> tuple[str, list[tuple[Entity, str]], list[str]]:
    """A question, the (entity, relation) hops and the accepted answers."""
    kinds = [k for k in _LINKS if corpus.by_kind[k]]
    entity = corpus.entities[_pick(rng, corpus.by_kind[_pick(rng, kinds)])]
    path: list[tuple[Entity, str]] = []
    seen = {entity.name}
    for _ in range(hops - 1):
        relation = _pick(rng, [r for r in _LINKS[entity.kind] if r in entity.facts])
        path.append((entity, relation))
        entity = corpus.entities[entity.facts[relation]]
        if entity.name in seen:
            raise _Reject
        seen.add(entity.name)
    relation = _pick(rng, [r for r in _ASK[entity.kind] if r in entity.facts])
    path.append((entity, relation))
    value = entity.facts[relation]
    if value in seen:
        raise _Reject
    answers = _answers(corpus, entity, relation)
    phrase = display_name(path[0][0])
    for hop_entity, hop_relation in path[:-1]:
        phrase = _LINKS[hop_entity.kind][hop_relation][1].format(phrase)
    question = _ASK[entity.kind][relation].format(phrase)
    question = question[0].upper() + question[1:]
    if hops > 1:  # the answer must not sit in the first entity's own article
        first = " ".join(_normalize(corpus.passage(p).text) for p in corpus.article_passages[path[0][0].name])
        if any(_normalize(a) in first for a in answers):
            raise _Reject
    return question, path, answers


def _comparison(corpus: Corpus, rng: random.Random) -> tuple[str, list[tuple[Entity, str]], list[str]]:
    kind = _pick(rng, [k for k in _COMPARE if len(corpus.by_kind[k]) >= 2])
    relation, template = _COMPARE[kind]
    names = corpus.by_kind[kind]
    a, b = (corpus.entities[names[i]] for i in rng.sample(range(len(names)), 2))
    if a.facts[relation] == b.facts[relation]:
        raise _Reject
    winner = a if a.facts[relation] < b.facts[relation] else b
    answers = [winner.name] if display_name(winner) == winner.name else [winner.name, display_name(winner)]
    return template.format(display_name(a), display_name(b)), [(a, relation), (b, relation)], answers


def generate_question(kind: str, seed: int, corpus_seed: int = 0, n_entities: int = 3000) -> Task:
    """Generate one question; a pure function of its arguments.

    Raises:
        ValueError: an unknown kind (with a suggestion) or a negative seed.

    >>> task = generate_question("bridge2", 7, n_entities=200)
    >>> task.id, task.difficulty, len(task.oracle_actions), task.metadata["hops"]
    ('search/bridge2/7', 2, 3, 2)
    >>> task.oracle_actions[-1] == f"<answer>{task.answer}</answer>"
    True
    """
    check_choice("question kind", kind, KINDS)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    corpus = build_corpus(corpus_seed, n_entities)
    rng = random.Random(int(seed) * len(KINDS) + KINDS.index(kind))
    for _ in range(_MAX_TRIES):
        try:
            if kind == "comparison":
                question, path, answers = _comparison(corpus, rng)
            else:
                question, path, answers = _chain(corpus, rng, HOPS[kind])
            break
        except _Reject:
            continue
    else:  # pragma: no cover - the corpus always has enough distinct chains
        raise RuntimeError(f"could not generate a {kind} question for seed {seed}")
    supporting = [corpus.fact_passage(e.name, r) for e, r in path]
    searches = tuple(f"<search>{e.name} {_QUERY_WORD[r]}</search>" for e, r in path)
    return Task(
        id=f"{ID_PREFIX}/{kind}/{int(seed)}",
        prompt=question,
        answer=answers[0],
        family="search",
        difficulty=HOPS[kind],
        oracle_actions=(*searches, f"<answer>{answers[0]}</answer>"),
        metadata={
            "kind": kind,
            "answers": answers,
            "supporting": supporting,
            "supporting_titles": [corpus.passage(p).title for p in supporting],
            "path": [[e.name, r] for e, r in path],
            "hops": HOPS[kind],
            "corpus_seed": int(corpus_seed),
            "n_entities": int(n_entities),
        },
    )


def parse_task_id(task_id: str) -> tuple[str, int]:
    """Split an id into ``(kind, seed)``.

    Raises:
        UnknownTask: the id is not ``"search/<kind>/<seed>"`` with a known kind.

    >>> parse_task_id("search/bridge3/42")
    ('bridge3', 42)
    """
    form = "procedural search ids look like 'search/<kind>/<seed>', e.g. 'search/bridge2/17'"
    match = _ID_PATTERN.match(task_id) if isinstance(task_id, str) else None
    if match is None:
        raise UnknownTask(task_id, hint=form)
    try:
        kind = check_choice("question kind", match["kind"], KINDS)
    except ValueError as exc:
        raise UnknownTask(task_id, hint=f"{exc}; {form}") from None
    return kind, int(match["seed"])


class ProceduralSearchSource:
    """An endless source of multi-hop questions over one generated corpus (implements ``TaskSource``).

    Args:
        kinds: the question kinds to draw from (default: all of :data:`KINDS`); a single string is allowed.
        corpus_seed: the encyclopedia's seed.
        n_entities: the encyclopedia's size.

    Raises:
        ValueError: an unknown or empty list of kinds.
    """

    def __init__(self, kinds: Sequence[str] | str | None = None, corpus_seed: int = 0, n_entities: int = 3000) -> None:
        if kinds is None:
            kinds = KINDS
        if isinstance(kinds, str):
            kinds = (kinds,)
        self.kinds: tuple[str, ...] = tuple(check_choice("question kind", k, KINDS) for k in kinds)
        if not self.kinds:
            raise ValueError(f"kinds must not be empty; choose from: {', '.join(KINDS)}")
        self.corpus_seed = int(corpus_seed)
        self.n_entities = int(n_entities)

    def __repr__(self) -> str:
        return (
            f"ProceduralSearchSource(kinds={list(self.kinds)!r}, corpus_seed={self.corpus_seed}, "
            f"n_entities={self.n_entities})"
        )

    @property
    def corpus(self) -> Corpus:
        """The (cached) corpus the questions are about."""
        return build_corpus(self.corpus_seed, self.n_entities)

    def sample(self, rng: np.random.Generator) -> Task:
        """Draw a kind and a question seed from ``rng``."""
        kind = self.kinds[int(rng.integers(len(self.kinds)))]
        return generate_question(kind, int(rng.integers(0, 2**31)), self.corpus_seed, self.n_entities)

    def get(self, task_id: str) -> Task:
        """Regenerate a task from its id (``"search/<kind>/<seed>"``) on this source's corpus."""
        kind, seed = parse_task_id(task_id)
        return generate_question(kind, seed, self.corpus_seed, self.n_entities)
