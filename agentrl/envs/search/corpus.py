"""A procedurally generated encyclopedia of fictional entities, for multi-hop retrieval QA.

Four kinds of entity are generated and wired together by functional relations:

* people: ``born`` (year), ``birthplace`` (city), ``occupation``, ``employer`` (organisation),
  ``spouse`` (person, symmetric, most people have one) and ``notable_work``;
* cities: ``country``, ``founded`` (year), ``river``, ``population`` and ``mayor`` (person);
* organisations: ``founded`` (year), ``founder`` (person), ``headquarters`` (city), ``industry``;
* events: ``year``, ``location`` (city) and ``organiser`` (organisation).

Names are built from syllables; every name word (surnames, city, country, river, organisation,
event and work words) is used once in the whole corpus, so names are unique and a full name never
occurs inside another. Each entity gets a prose article (paraphrased fact sentences, mentions of
related and unrelated entities, filler) in shuffled order, split into passages of roughly 60-120
words titled with the entity's name. Every sentence names its subject, so every passage does too.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ENTITY_KINDS", "Corpus", "Entity", "Passage", "build_corpus", "display_name"]

ENTITY_KINDS: tuple[str, ...] = ("person", "city", "org", "event")

_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "gr", "kr", "tr",
           "th", "sh", "st", "vl", "q")  # fmt: skip
_VOWELS = ("a", "e", "i", "o", "u", "ae", "ei", "ou", "y")
_CODAS = ("", "", "", "n", "r", "l", "s", "th", "m", "x")
_OCCUPATIONS = ("painter", "cartographer", "botanist", "surgeon", "composer", "sculptor", "lawyer", "poet", "chemist",
                "navigator", "banker", "historian", "printer", "weaver", "diplomat", "physician", "novelist",
                "mathematician", "brewer", "astronomer", "engineer", "architect", "economist", "librarian")  # fmt: skip
_INDUSTRIES = ("shipping", "textiles", "publishing", "banking", "mining", "brewing", "insurance", "railways",
               "pharmaceuticals", "glassmaking", "timber", "telegraphy", "shipbuilding", "porcelain", "optics",
               "clockmaking", "printing", "tea trading")  # fmt: skip
_ORG_SUFFIXES = ("Company", "Institute", "Society", "Works", "Trust", "Guild", "Foundation", "Press", "Bank",
                 "Academy", "Consortium", "Syndicate")  # fmt: skip
_EVENT_SUFFIXES = ("Festival", "Congress", "Exposition", "Games", "Fair", "Summit", "Conference", "Regatta",
                   "Treaty Talks", "Biennale")  # fmt: skip
_WORK_NOUNS = ("Letters", "Chronicles", "Atlas", "Variations", "Cycle", "Treatise", "Songs", "Codex", "Elegies",
               "Herbarium", "Nocturnes", "Survey")  # fmt: skip


@dataclass(frozen=True)
class Passage:
    """One retrievable chunk of an article.

    Attributes:
        id: ``"p<number>"``.
        title: the article's title (the entity name).
        text: the prose, 60-120 words or so.
    """

    id: str
    title: str
    text: str


@dataclass
class Entity:
    """The structured facts about one entity.

    Attributes:
        name: unique name (e.g. ``"Olan Verdu"``, ``"Tresk Institute"``).
        kind: one of :data:`ENTITY_KINDS`.
        facts: relation -> value; entity-valued relations hold the other entity's name, years are ints.
    """

    name: str
    kind: str
    facts: dict[str, Any] = field(default_factory=dict)


def display_name(entity: Entity) -> str:
    """The name as prose uses it: organisations and events take ``"the"``.

    >>> display_name(Entity("Tresk Institute", "org")), display_name(Entity("Olan Verdu", "person"))
    ('the Tresk Institute', 'Olan Verdu')
    """
    return f"the {entity.name}" if entity.kind in ("org", "event") else entity.name


@dataclass
class Corpus:
    """The generated encyclopedia.

    Attributes:
        seed: the generation seed.
        passages: all passages, ids ``"p0"``, ``"p1"``, ... in order.
        entities: name -> :class:`Entity`.
        by_kind: kind -> entity names in generation order.
        article_passages: entity name -> the ids of its article's passages.
    """

    seed: int
    passages: list[Passage]
    entities: dict[str, Entity]
    by_kind: dict[str, list[str]]
    article_passages: dict[str, list[str]]
    _fact_passages: dict[tuple[str, str], str] = field(repr=False, default_factory=dict)
    _by_id: dict[str, Passage] = field(repr=False, default_factory=dict)

    def fact_passage(self, entity: str, relation: str) -> str:
        """The id of the passage in ``entity``'s article that states ``relation``.

        Raises:
            KeyError: the entity has no such fact.
        """
        try:
            return self._fact_passages[(entity, relation)]
        except KeyError:
            raise KeyError(f"no passage states {relation!r} of {entity!r}") from None

    def passage(self, passage_id: str) -> Passage:
        """A passage by id."""
        if not self._by_id:
            self._by_id = {p.id: p for p in self.passages}
        return self._by_id[passage_id]

    def digest(self) -> str:
        """SHA-256 (hex) over all passage ids, titles and texts, in order; stable across runs."""
        h = hashlib.sha256()
        for p in self.passages:
            h.update(f"{p.id}\x1f{p.title}\x1f{p.text}\x1e".encode())
        return h.hexdigest()

    def save_jsonl(self, path: str | os.PathLike[str]) -> Path:
        """Write the passages in the FlashRAG / Search-R1 format: ``{"id", "contents"}`` with a quoted title line."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w", encoding="utf-8") as handle:
            for p in self.passages:
                handle.write(json.dumps({"id": p.id, "contents": f'"{p.title}"\n{p.text}'}) + "\n")
        return out


# --------------------------------------------------------------------------------------------
# sentence templates: (relations stated, template); fields: n=name, plus per-relation values

_Template = tuple[tuple[str, ...], str]

_PERSON: list[list[_Template]] = [
    [(("born", "birthplace"), "{n} was born in {born} in {birthplace}."),
     (("born", "birthplace"), "{birthplace} is where {n} was born, in the year {born}."),
     (("born", "birthplace"), "In {born}, {n} was born in the city of {birthplace}.")],
    [(("occupation",), "{n} worked as {occ_a}."), (("occupation",), "By profession, {n} was {occ_a}."),
     (("occupation",), "{n} made a living as {occ_a} for most of a long career.")],
    [(("employer",), "{n} was employed by {employer_d}."),
     (("employer",), "For many years {n} worked for {employer_d}."),
     (("employer",), "{employer_D} employed {n} during the most productive part of that career.")],
    [(("notable_work",), "{n} is best known for {notable_work}."),
     (("notable_work",), "{notable_work} is the best-known work of {n}."),
     (("notable_work",), "Among everything written by {n}, {notable_work} remains the most widely read.")],
]  # fmt: skip
_SPOUSE: list[_Template] = [(("spouse",), "{n} was married to {spouse}."),
                            (("spouse",), "{spouse} and {n} were married for many years."),
                            (("spouse",), "{n} married {spouse}, and the couple settled together.")]  # fmt: skip
_CITY: list[list[_Template]] = [
    [(("country",), "{n} is a city in {country}."), (("country",), "{n} lies in the country of {country}."),
     (("country",), "{country} is the country in which {n} is located.")],
    [(("founded",), "{n} was founded in {founded}."), (("founded",), "The founding of {n} dates to {founded}."),
     (("founded",), "Settlers established {n} in {founded}.")],
    [(("river",), "The {river} River flows through {n}."), (("river",), "{n} sits on the banks of the {river} River."),
     (("river",), "The {river} River runs through the middle of {n}.")],
    [(("population",), "{n} has a population of {population}."),
     (("population",), "Some {population} people live in {n}."),
     (("population",), "At the last census {n} counted {population} inhabitants.")],
    [(("mayor",), "The mayor of {n} is {mayor}."), (("mayor",), "{mayor} serves as mayor of {n}."),
     (("mayor",), "{n} is governed by its mayor, {mayor}.")],
]  # fmt: skip
_ORG: list[list[_Template]] = [
    [(("founded",), "{N} was founded in {founded}."), (("founded",), "{founded} was the year {n} was established."),
     (("founded",), "{N} has existed since {founded}.")],
    [(("founder",), "{N} was founded by {founder}."), (("founder",), "{founder} is the founder of {n}."),
     (("founder",), "{founder} set up {n} with a small circle of partners.")],
    [(("headquarters",), "{N} is headquartered in {headquarters}."),
     (("headquarters",), "{headquarters} is home to the headquarters of {n}."),
     (("headquarters",), "The main offices of {n} are in {headquarters}.")],
    [(("industry",), "{N} operates in the {industry} industry."), (("industry",), "{N} is active in {industry}."),
     (("industry",), "The business of {n} is {industry}.")],
]  # fmt: skip
_EVENT: list[list[_Template]] = [
    [(("year", "location"), "{N} was held in {location} in {year}."),
     (("year", "location"), "In {year}, {location} hosted {n}."),
     (("year", "location"), "{N} took place in {year} in the city of {location}.")],
    [(("organiser",), "{N} was organised by {organiser_d}."), (("organiser",), "{organiser_D} organised {n}."),
     (("organiser",), "The organiser of {n} was {organiser_d}.")],
]  # fmt: skip
_MENTIONS = ("{N} is often compared with {x}.", "Accounts of {n} frequently mention {x}.",
             "{N} has long been associated in the public mind with {x}.", "Writers have linked {n} to {x}.",
             "A well-known portrait connects {n} with {x}.", "Archives about {n} are kept alongside papers on {x}.",
             "{N} is mentioned in the same breath as {x} in several surveys.",
             "A recent study treats {n} and {x} side by side.")  # fmt: skip
_FILLER = ("Little is recorded about the earliest days of {n}.", "Historians have written at length about {n}.",
           "Several archives hold documents concerning {n}.", "The reputation of {n} grew steadily over time.",
           "Modern scholars continue to debate the legacy of {n}.",
           "Contemporary newspapers reported regularly on {n}.",
           "Much of what is known about {n} comes from letters and official records.",
           "{N} appears in a number of local histories and guidebooks.",
           "Visitors and critics have described {n} in very different terms.",
           "An exhibition devoted to {n} was mounted long after the fact.",
           "Opinions about {n} have shifted considerably from one generation to the next.",
           "Few subjects in the regional record are as well documented as {n}.",
           "A short biography of {n} circulated widely in its day.",
           "Some early sources about {n} contradict one another on small details.",
           "{N} is the subject of a long entry in the standard reference works.",
           "Teachers in the region still introduce pupils to {n}.",
           "The name of {n} turns up in many travel diaries.",
           "Commentators have praised {n} and criticised it in equal measure.",
           "Much about {n} remains uncertain despite careful study.",
           "Collectors prize early printed material about {n}.",
           "There is a small museum display about {n} that draws a steady trickle of visitors.",
           "Popular retellings tend to exaggerate the importance of {n}.")  # fmt: skip


def _article(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word


def _cap(text: str) -> str:
    return text[0].upper() + text[1:]


class _Builder:
    def __init__(self, seed: int, n_entities: int) -> None:
        self.rng = random.Random(seed)
        self.used: set[str] = set()
        self.n = n_entities

    def word(self, low: int = 2, high: int = 3) -> str:
        rng = self.rng
        while True:
            k = rng.randint(low, high)
            w = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(k))
            if 4 <= len(w) <= 12 and w not in self.used:
                self.used.add(w)
                return w.capitalize()

    def build(self) -> tuple[dict[str, Entity], dict[str, list[str]]]:
        rng, n = self.rng, self.n
        n_city, n_org, n_event = max(4, n // 10), max(4, n * 15 // 100), max(3, n // 10)
        n_person = n - n_city - n_org - n_event
        firsts = [self.word(2, 2) for _ in range(min(400, max(20, n_person // 5)))]
        countries = [self.word() for _ in range(max(3, n_city // 10))]
        rivers = [self.word() for _ in range(max(3, n_city // 3))]
        ents: dict[str, Entity] = {}
        kinds: dict[str, list[str]] = {k: [] for k in ENTITY_KINDS}

        def add(name: str, kind: str) -> Entity:
            e = Entity(name, kind)
            ents[name] = e
            kinds[kind].append(name)
            return e

        people = [add(f"{rng.choice(firsts)} {self.word()}", "person") for _ in range(n_person)]
        cities = [add(self.word(), "city") for _ in range(n_city)]
        orgs = [add(f"{self.word()} {rng.choice(_ORG_SUFFIXES)}", "org") for _ in range(n_org)]
        events = [add(f"{self.word()} {rng.choice(_EVENT_SUFFIXES)}", "event") for _ in range(n_event)]
        for c in cities:
            c.facts.update(country=rng.choice(countries), founded=rng.randint(900, 1750), river=rng.choice(rivers),
                           population=f"{rng.randint(3_000, 2_900_000):,}")  # fmt: skip
        for o in orgs:
            o.facts.update(founded=rng.randint(1760, 1960), headquarters=rng.choice(cities).name,
                           industry=rng.choice(_INDUSTRIES))  # fmt: skip
        for p in people:
            p.facts.update(born=rng.randint(1700, 1940), birthplace=rng.choice(cities).name,
                           occupation=rng.choice(_OCCUPATIONS), employer=rng.choice(orgs).name,
                           notable_work=f"The {self.word()} {rng.choice(_WORK_NOUNS)}")  # fmt: skip
        # distinct founders and mayors, founders born 25-55 years before the founding
        chosen = rng.sample(people, n_org + n_city)
        for o, p in zip(orgs, chosen[:n_org], strict=True):
            o.facts["founder"] = p.name
            p.facts["born"] = o.facts["founded"] - rng.randint(25, 55)
        for c, p in zip(cities, chosen[n_org:], strict=True):
            c.facts["mayor"] = p.name
        for e in events:
            e.facts.update(year=rng.randint(1800, 2005), location=rng.choice(cities).name,
                           organiser=rng.choice(orgs).name)  # fmt: skip
        order = list(people)
        rng.shuffle(order)
        pairs = len(order) * 2 // 5  # 80% of people are married
        for a, b in zip(order[0 : 2 * pairs : 2], order[1 : 2 * pairs : 2], strict=True):
            a.facts["spouse"], b.facts["spouse"] = b.name, a.name
        return ents, kinds


def _sentences(e: Entity, ents: dict[str, Entity], names: list[str], rng: random.Random) -> list[tuple[set[str], str]]:
    f = e.facts
    d = display_name(e)
    fmt: dict[str, Any] = {"n": d, "N": _cap(d), **f}
    if e.kind == "person":
        groups = list(_PERSON) + ([_SPOUSE] if "spouse" in f else [])
        employer = display_name(ents[f["employer"]])
        fmt.update(occ_a=_article(f["occupation"]), employer_d=employer, employer_D=_cap(employer))
    elif e.kind == "city":
        groups = _CITY
    elif e.kind == "org":
        groups = _ORG
    else:
        groups = _EVENT
        organiser = display_name(ents[f["organiser"]])
        fmt.update(organiser_d=organiser, organiser_D=_cap(organiser))
    out: list[tuple[set[str], str]] = []
    for group in groups:
        relations, template = rng.choice(group)
        out.append((set(relations), template.format(**fmt)))
    for _ in range(rng.randint(3, 6)):
        other = ents[rng.choice(names)]
        if other.name != e.name:
            out.append((set(), rng.choice(_MENTIONS).format(n=d, N=_cap(d), x=display_name(other))))
    for template in rng.sample(_FILLER, rng.randint(16, 22)):
        out.append((set(), template.format(n=d, N=_cap(d))))
    rng.shuffle(out)
    return out


@functools.lru_cache(maxsize=8)
def build_corpus(seed: int = 0, n_entities: int = 3000) -> Corpus:
    """Generate the encyclopedia; a pure function of ``(seed, n_entities)`` (cached).

    Args:
        seed: the generation seed.
        n_entities: how many entities (about 55-60% people, 10% cities, 15% organisations, 10% events);
            each article gives about 2-3 passages.

    Raises:
        ValueError: ``n_entities`` below 40.

    >>> corpus = build_corpus(0, 200)
    >>> corpus.passages[0].id, len(corpus.entities)
    ('p0', 200)
    >>> e = corpus.entities[corpus.by_kind["org"][0]]
    >>> e.facts["founder"] in corpus.passage(corpus.fact_passage(e.name, "founder")).text
    True
    """
    if isinstance(n_entities, bool) or not isinstance(n_entities, int) or n_entities < 40:
        raise ValueError(f"n_entities must be an int >= 40, got {n_entities!r}")
    ents, kinds = _Builder(int(seed), n_entities).build()
    rng = random.Random(int(seed) * 7919 + 1)
    names = list(ents)
    passages: list[Passage] = []
    article: dict[str, list[str]] = {}
    facts: dict[tuple[str, str], str] = {}
    append: Callable[[Passage], None] = passages.append
    for name in names:
        sentences = _sentences(ents[name], ents, names, rng)
        chunks: list[list[tuple[set[str], str]]] = [[]]
        words = 0
        target = rng.randint(70, 110)
        for item in sentences:
            count = item[1].count(" ") + 1
            if chunks[-1] and (words >= target or words + count > 120):
                chunks.append([])
                words, target = 0, rng.randint(70, 110)
            chunks[-1].append(item)
            words += count
        if len(chunks) > 1 and words < 45:
            chunks[-2].extend(chunks.pop())
        ids = []
        for chunk in chunks:
            pid = f"p{len(passages)}"
            ids.append(pid)
            append(Passage(pid, name, " ".join(text for _, text in chunk)))
            for relations, _ in chunk:
                for relation in relations:
                    facts[(name, relation)] = pid
        article[name] = ids
    return Corpus(int(seed), passages, ents, kinds, article, facts)
