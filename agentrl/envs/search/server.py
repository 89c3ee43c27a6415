"""A retrieval server for ``AgentRL/Search-v0`` (FastAPI on uvicorn, :mod:`agentrl.core.serving`; loopback by default).

``POST /search {"queries": [...], "k": 3}`` answers ``{"results": [[{id, title, text, score}, ...],
...]}``; ``GET /health`` answers ``{"status": "ok", "kind": ..., "n_passages": ...}``.

Run it with ``agentrl serve-retriever`` or ``python -m agentrl.envs.search.server``::

    python -m agentrl.envs.search.server --kind bm25 --corpus-jsonl wiki-18.jsonl
    python -m agentrl.envs.search.server --kind hybrid --generated-seed 0 --n-entities 2000

Non-loopback hosts are refused unless ``--allow-remote`` is given (the server has no auth).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agentrl.core.serving import ServerHandle, is_loopback, refuse_remote, start_server_thread
from agentrl.envs.search.retrieval import Retriever, get_retriever

__all__ = [
    "MAX_K",
    "MAX_QUERIES",
    "JsonlPassage",
    "SearchRequest",
    "ServerHandle",
    "create_app",
    "is_loopback",
    "load_corpus_jsonl",
    "main",
    "serve",
    "start_server_thread",
]

DEFAULT_PORT = 8765
LOG = logging.getLogger("agentrl.search.server")
MAX_K = 100
"""Requests asking for more hits get this many."""
MAX_QUERIES = 1024
"""Requests with more queries are refused (413)."""


@dataclass(frozen=True)
class JsonlPassage:
    """A passage read from a FlashRAG-format JSONL line."""

    id: str
    title: str
    text: str


def load_corpus_jsonl(path: str | Path) -> list[JsonlPassage]:
    r"""Passages from FlashRAG JSONL: ``{"id": ..., "contents": "\"Title\"\ntext"}`` per line.

    Lines with ``title``/``text`` fields instead of ``contents`` are accepted too.
    """
    out: list[JsonlPassage] = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            line = line.strip()
            if not line:
                continue
            row = json.loads(line)
            pid = str(row.get("id", n))
            if "contents" in row:
                title, _, text = str(row["contents"]).partition("\n")
                title = title.strip()
                if len(title) >= 2 and title[0] == title[-1] == '"':
                    title = title[1:-1]
            else:
                title, text = str(row.get("title", "")), str(row.get("text", ""))
            out.append(JsonlPassage(pid, title, text))
    return out


class SearchRequest(BaseModel):
    """The body of ``POST /search``."""

    queries: list[str]
    k: int = Field(default=3, ge=0)


def create_app(retriever: Retriever, kind: str | None = None) -> Any:
    """A FastAPI app serving ``retriever``."""
    from fastapi import FastAPI, HTTPException

    app = FastAPI(title="AgentRL retrieval server")
    n_passages = len(getattr(retriever, "passages", ()) or ())
    label = kind or getattr(retriever, "kind", type(retriever).__name__)

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {"status": "ok", "kind": label, "n_passages": n_passages}

    @app.post("/search")
    def search(req: SearchRequest) -> dict[str, Any]:  # sync: FastAPI runs it in a thread pool
        if len(req.queries) > MAX_QUERIES:
            raise HTTPException(status_code=413, detail=f"at most {MAX_QUERIES} queries per request")
        k = min(req.k, MAX_K)
        results = retriever.search_batch(req.queries, k)
        return {"results": [[h.to_dict() for h in row] for row in results]}  # type: ignore[attr-defined]

    return app


def serve(
    kind: str = "bm25",
    corpus: Sequence[Any] | None = None,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    cache_dir: str | Path | None = None,
    allow_remote: bool = False,
) -> None:
    """Build (or load) the ``kind`` retriever over ``corpus`` and serve it until interrupted.

    Each request is logged at INFO on the ``agentrl.search.server`` logger.
    """
    from agentrl.core.serving import ServingMiddleware

    if corpus is None:
        raise ValueError("serve() needs a corpus (a sequence of passages)")
    refuse_remote(host, allow_remote, "retrieval server")
    retriever = get_retriever(kind, corpus, cache_dir)  # type: ignore[arg-type]
    app = ServingMiddleware(create_app(retriever, kind), logger=LOG)
    handle = start_server_thread(app, host, port, name="agentrl-retrieval-server")
    try:
        while handle.thread.is_alive():
            handle.thread.join(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        handle.close()


def main(argv: Sequence[str] | None = None) -> int:
    """``agentrl serve-retriever``: parse arguments and :func:`serve`. Returns an exit status."""
    parser = argparse.ArgumentParser(prog="agentrl serve-retriever", description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=["bm25", "dense", "hybrid"], default="bm25")
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--corpus-jsonl", metavar="PATH", help="FlashRAG JSONL: {id, contents} per line")
    src.add_argument("--generated-seed", type=int, metavar="N", help="the generated Search-v0 corpus")
    parser.add_argument(
        "--n-entities", type=int, default=3000, help="entities in the generated corpus (3000, as AgentRL/Search-v0)"
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--cache-dir", default=None, help="index cache root (default $AGENTRL_CACHE)")
    parser.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host")
    args = parser.parse_args(list(argv) if argv is not None else None)

    try:
        refuse_remote(args.host, args.allow_remote, "retrieval server")
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.corpus_jsonl:
        passages: Sequence[Any] = load_corpus_jsonl(args.corpus_jsonl)
    else:
        try:
            from agentrl.envs.search.corpus import build_corpus
        except ImportError as exc:
            print(f"the generated corpus is unavailable ({exc}); use --corpus-jsonl", file=sys.stderr)
            return 2
        passages = build_corpus(args.generated_seed, args.n_entities).passages
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    print(f"serving {args.kind} over {len(passages)} passages on http://{args.host}:{args.port}", file=sys.stderr)
    try:
        serve(args.kind, passages, args.host, args.port, args.cache_dir, allow_remote=args.allow_remote)
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
