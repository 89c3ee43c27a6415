"""A retrieval server for ``AgentRL/Search-v0`` (FastAPI on uvicorn, :mod:`agentrl.serving.stack`; loopback by default).

``POST /search {"queries": [...], "k": 3}`` answers ``{"results": [[{id, title, text, score}, ...],
...]}``; ``GET /health`` answers ``{"status": "ok", "kind": ..., "n_passages": ...}``.

``POST /retrieve`` speaks Search-R1's protocol (:mod:`agentrl.envs.search.searchr1`), so Search-R1's
agent (``search_url=http://127.0.0.1:8765/retrieve``) runs against it unchanged:
``{"queries": [...], "topk": 3, "return_scores": true}`` answers ``{"result": [[{"document": {"id",
"contents"}, "score"}, ...], ...]}`` (the bare documents when ``return_scores`` is false); a missing or
null ``topk`` means ``--topk`` (3). Unlike Search-R1, ``topk: 0`` is refused (422), as are wrong types.
Validation errors answer 422 with FastAPI's ``detail`` list and a one-line ``error``.

Run it with ``agentrl serve-retriever`` or ``python -m agentrl.envs.search.server``::

    python -m agentrl.envs.search.server --kind bm25 --corpus-jsonl wiki-18.jsonl
    python -m agentrl.envs.search.server --kind hybrid --generated-seed 0 --n-entities 2000
    python -m agentrl.envs.search.server --kind dense --corpus-jsonl wiki-18.jsonl --retriever-model ./e5-base-v2

A dense model's query/passage prefixes default by its name (``"query: "``/``"passage: "`` for e5,
as Search-R1 does); ``--query-prefix``/``--passage-prefix`` override them.

Non-loopback hosts are refused unless ``--allow-remote`` is given; ``--token`` (of at least 16 characters off
loopback) makes every route but ``/health`` need ``Authorization: Bearer <token>`` (Search-R1's client sends
none, so it is optional). Request bodies above :data:`MAX_REQUEST_BYTES` answer 413 before they are parsed, and
every request passes :mod:`agentrl.serving.guard` first (``Host`` and ``Origin``, JSON bodies only, a body
deadline, a connection limit and a header timeout); ``docs/design/security.md`` is the threat model.
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

from pydantic import BaseModel, Field, StrictBool

from agentrl.envs.search import searchr1
from agentrl.envs.search.retrieval import Retriever, get_retriever
from agentrl.serving.guard import check_token
from agentrl.serving.stack import (
    ServerHandle,
    add_guard_arguments,
    guard_options,
    is_loopback,
    read_token,
    refuse_remote,
    start_server_thread,
)

__all__ = [
    "MAX_K",
    "MAX_QUERIES",
    "JsonlPassage",
    "RetrieveRequest",
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
MAX_REQUEST_BYTES = 1024 * 1024
"""The largest request body (1,024 queries of 1 KB each); larger ones answer 413 before they are parsed."""


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


class RetrieveRequest(BaseModel):
    """The body of ``POST /retrieve`` (Search-R1's ``QueryRequest``; strict types, ``topk >= 1``)."""

    queries: list[str]
    topk: int | None = Field(default=None, ge=1, strict=True)
    return_scores: StrictBool = False


_USAGE = {
    "/search": '{"queries": [str, ...], "k": int >= 0}',
    "/retrieve": '{"queries": [str, ...], "topk": int >= 1 (optional), "return_scores": bool (optional)}',
}


def _validation_message(errors: Sequence[Any], path: str) -> str:
    parts = []
    for err in errors:
        loc = ".".join(str(x) for x in err.get("loc", ()) if x != "body") or "body"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    usage = _USAGE.get(path)
    return "; ".join(parts) + (f" (POST {path} takes {usage})" if usage else "")


def create_app(retriever: Retriever, kind: str | None = None, default_topk: int = searchr1.DEFAULT_TOPK) -> Any:
    """A FastAPI app serving ``retriever`` on ``/search`` (ours), ``/retrieve`` (Search-R1's) and ``/health``.

    Args:
        retriever: What answers the queries.
        kind: The label ``/health`` reports (default: the retriever's ``kind``).
        default_topk: Hits per query for a ``/retrieve`` request without ``topk`` (Search-R1: 3).
    """
    from fastapi import FastAPI, HTTPException, Request
    from fastapi.encoders import jsonable_encoder
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse

    if isinstance(default_topk, bool) or not isinstance(default_topk, int) or default_topk < 1:
        raise ValueError(f"default_topk must be an int >= 1, got {default_topk!r}")
    app = FastAPI(title="AgentRL retrieval server")
    n_passages = len(getattr(retriever, "passages", ()) or ())
    label = kind or getattr(retriever, "kind", type(retriever).__name__)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        body = {"detail": jsonable_encoder(errors), "error": _validation_message(errors, request.url.path)}
        return JSONResponse(body, status_code=422)

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

    @app.post("/retrieve")
    def retrieve(req: RetrieveRequest) -> Any:
        if len(req.queries) > MAX_QUERIES:
            raise HTTPException(status_code=413, detail=f"at most {MAX_QUERIES} queries per request")
        topk = min(req.topk if req.topk is not None else default_topk, MAX_K)
        rows = retriever.search_batch(req.queries, topk) if req.queries else []
        return JSONResponse(searchr1.format_result(rows, req.return_scores))

    return app


def guarded_app(app: Any, *, token: str | None = None, max_request_bytes: int = MAX_REQUEST_BYTES) -> Any:
    """``app`` (:func:`create_app`'s) behind the body cap, the JSON-only check and, with ``token``, the token."""
    from agentrl.serving.stack import ServingMiddleware, check_bearer

    def authenticate(header: str | None, path: str) -> None:
        if token is not None and path != "/health":
            check_bearer(header, {token: None})

    return ServingMiddleware(app, logger=LOG, authenticate=authenticate, max_request_bytes=max_request_bytes)


def serve(
    kind: str = "bm25",
    corpus: Sequence[Any] | None = None,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    cache_dir: str | Path | None = None,
    allow_remote: bool = False,
    *,
    model_path: str | None = None,
    query_prefix: str | None = None,
    passage_prefix: str | None = None,
    default_topk: int = searchr1.DEFAULT_TOPK,
    token: str | None = None,
    max_request_bytes: int = MAX_REQUEST_BYTES,
    **guard: Any,
) -> None:
    """Build (or load) the ``kind`` retriever over ``corpus`` and serve it until interrupted.

    ``model_path``, ``query_prefix`` and ``passage_prefix`` choose the dense model (see
    :func:`~agentrl.envs.search.retrieval.get_retriever`); ``default_topk`` is ``/retrieve``'s default.
    ``token`` guards every route but ``/health``; ``guard`` goes to
    :func:`~agentrl.serving.stack.start_server_thread`. Once it listens, ``agentrl-retrieval-server: URL`` (the
    bound port, also for ``port=0``) is printed on stdout. Each request is logged at INFO on the
    ``agentrl.search.server`` logger.
    """
    if corpus is None:
        raise ValueError("serve() needs a corpus (a sequence of passages)")
    refuse_remote(host, allow_remote, "retrieval server")
    check_token(token, host, server="retrieval server")
    retriever = get_retriever(
        kind, corpus, cache_dir,  # type: ignore[arg-type]
        model_path=model_path, query_prefix=query_prefix, passage_prefix=passage_prefix,
    )
    app = guarded_app(create_app(retriever, kind, default_topk), token=token, max_request_bytes=max_request_bytes)
    handle = start_server_thread(app, host, port, name="agentrl-retrieval-server", **guard)
    print(f"agentrl-retrieval-server: {handle.url}", flush=True)
    print(f"serving {kind} over {len(corpus)} passages on {handle.url}", file=sys.stderr, flush=True)
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
    parser.add_argument(
        "--token", default=None,
        help="a bearer token every route but /health needs; @FILE reads it from FILE (default: none)",
    )
    parser.add_argument(
        "--max-request-bytes", type=int, default=MAX_REQUEST_BYTES,
        help=f"larger request bodies answer 413 (default {MAX_REQUEST_BYTES})",
    )
    add_guard_arguments(parser)
    parser.add_argument(
        "--retriever-model", metavar="PATH", default=None,
        help="dense/hybrid: a local sentence-transformers model directory (default: the packaged all-MiniLM-L6-v2)",
    )
    parser.add_argument(
        "--query-prefix", default=None,
        help='put before every query (default by model name: "query: " for e5, none for MiniLM)',
    )
    parser.add_argument(
        "--passage-prefix", default=None,
        help='put before every passage (default by model name: "passage: " for e5, none for MiniLM)',
    )
    parser.add_argument(
        "--topk", type=int, default=searchr1.DEFAULT_TOPK,
        help="hits per query for a /retrieve request without topk (3, as Search-R1)",
    )
    args = parser.parse_args(list(argv) if argv is not None else None)
    dense_flags = args.retriever_model or args.query_prefix is not None or args.passage_prefix is not None
    if args.kind == "bm25" and dense_flags:
        print("--retriever-model, --query-prefix and --passage-prefix apply to --kind dense or hybrid", file=sys.stderr)
        return 2
    if args.topk < 1:
        print(f"--topk must be >= 1, got {args.topk}", file=sys.stderr)
        return 2

    try:
        token = read_token(args.token)
        refuse_remote(args.host, args.allow_remote, "retrieval server")
        check_token(token, args.host, server="retrieval server")
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
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
    try:
        serve(
            args.kind, passages, args.host, args.port, args.cache_dir, allow_remote=args.allow_remote,
            model_path=args.retriever_model, query_prefix=args.query_prefix, passage_prefix=args.passage_prefix,
            default_topk=args.topk, token=token, max_request_bytes=args.max_request_bytes, **guard_options(args),
        )
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
