r"""Search-R1's retrieval protocol (``POST /retrieve``), both sides: the wire shapes and nothing else.

Search-R1 (``search_r1/search/retrieval_server.py``) answers

* request ``{"queries": [str, ...], "topk": int | null, "return_scores": bool}``; ``topk`` falls
  back to the server's default (3) when absent, ``return_scores`` defaults to ``false``;
* response ``{"result": [row, ...]}``, one row per query, in query order. A row lists documents,
  best first: ``{"document": doc, "score": float}`` when ``return_scores``, else ``doc`` itself.
  A ``doc`` is a corpus row, ``{"id": str, "contents": "\"Title\"\ntext"}`` for wiki-18 (its BM25
  server sends ``{"title", "text", "contents"}`` instead).

Its agent (``search_r1/llm_agent/generation.py``) posts ``return_scores: true`` and reads only
``doc["contents"]``: the first line is the title, the rest the text.

>>> from agentrl.envs.search.hit import Hit
>>> body = format_result([[Hit("7", "Ada", "Ada was a mathematician.", 0.5)]], return_scores=True)
>>> body
{'result': [[{'document': {'id': '7', 'contents': '"Ada"\nAda was a mathematician.'}, 'score': 0.5}]]}
>>> parse_result(body, n_queries=1)
[[Hit(id='7', title='Ada', text='Ada was a mathematician.', score=0.5)]]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from agentrl.envs.search.datasets import split_contents
from agentrl.envs.search.hit import Hit

__all__ = ["DEFAULT_TOPK", "build_request", "format_result", "hit_to_document", "join_contents", "parse_result"]

DEFAULT_TOPK = 3
"""Search-R1's server default (``--topk 3``), used when a request has no ``topk``."""


def join_contents(title: str, text: str) -> str:
    r"""FlashRAG ``contents``: the title in double quotes on the first line, then the text.

    >>> join_contents("Ada", "Ada was a mathematician.")
    '"Ada"\nAda was a mathematician.'
    """
    return f'"{title}"\n{text}'


def hit_to_document(hit: Hit) -> dict[str, str]:
    """A hit as a Search-R1 corpus row: ``{"id", "contents"}``."""
    return {"id": hit.id, "contents": join_contents(hit.title, hit.text)}


def build_request(queries: Sequence[str], topk: int, return_scores: bool = True) -> dict[str, Any]:
    """The body of ``POST /retrieve``, as Search-R1's agent sends it.

    >>> build_request(["who?"], 3)
    {'queries': ['who?'], 'topk': 3, 'return_scores': True}
    """
    return {"queries": list(queries), "topk": int(topk), "return_scores": bool(return_scores)}


def format_result(rows: Sequence[Sequence[Hit]], return_scores: bool) -> dict[str, Any]:
    """The body of a ``/retrieve`` answer for ``rows`` (one list of hits per query)."""
    if return_scores:
        return {"result": [[{"document": hit_to_document(h), "score": h.score} for h in row] for row in rows]}
    return {"result": [[hit_to_document(h) for h in row] for row in rows]}


def _document_to_hit(item: Any, where: str) -> Hit:
    score: Any = 0.0
    doc = item
    if isinstance(item, dict) and "document" in item:
        doc, score = item["document"], item.get("score", 0.0)
    if not isinstance(doc, dict):
        raise ValueError(f"{where}: a document must be a JSON object, got {type(doc).__name__}")
    if isinstance(doc.get("contents"), str):
        title, text = split_contents(doc["contents"])
    elif isinstance(doc.get("text"), str):
        title, text = str(doc.get("title", "")), doc["text"]
    else:
        raise ValueError(f"{where}: a document needs a string 'contents' (or 'title' and 'text'); keys: {sorted(doc)}")
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        raise ValueError(f"{where}: 'score' must be a finite number, got {score!r}")
    return Hit(id=str(doc.get("id", "")), title=title, text=text, score=float(score))


def parse_result(data: Any, n_queries: int) -> list[list[Hit]]:
    """Hits from a ``/retrieve`` answer (with or without scores; a missing score reads as 0).

    Raises:
        ValueError: the answer is not ``{"result": [row, ...]}`` with one list of documents per
            query; the message says what was wrong where.

    >>> parse_result({"result": [[{"id": "1", "contents": "no title line"}]]}, 1)[0][0].text
    'no title line'
    >>> parse_result({"results": []}, 1)
    Traceback (most recent call last):
    ...
    ValueError: expected a JSON object with a 'result' list, got keys ['results']
    """
    if not isinstance(data, dict) or not isinstance(data.get("result"), list):
        got = f"keys {sorted(data)}" if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"expected a JSON object with a 'result' list, got {got}")
    rows = data["result"]
    if len(rows) != n_queries:
        raise ValueError(f"'result' has {len(rows)} rows for {n_queries} queries (one list per query expected)")
    out = []
    for q, row in enumerate(rows):
        if not isinstance(row, list):
            raise ValueError(f"result[{q}] must be a list of documents, got {type(row).__name__}")
        out.append([_document_to_hit(item, f"result[{q}][{i}]") for i, item in enumerate(row)])
    return out
