"""Local retrievers for ``AgentRL/Search-v0``: BM25 (bm25s), dense (sentence embeddings + faiss) and hybrid.

Indexes are built once per corpus, saved under ``$AGENTRL_CACHE/search/<kind>-<digest>`` (default
``~/.cache/agentrl``; the digest is the first 16 hex digits of a SHA-256 over the passages' ids,
titles and texts), written atomically (a temporary directory, then a rename) and loaded
memory-mapped. :func:`get_retriever` keeps a process-wide cache keyed by ``(kind, digest)`` (and the
dense model and its prefixes), so that any number of env instances in one process share one index
object, and each embedding model (MiniLM by default; any local sentence-transformers directory, e5
included, with its query/passage prefixes) is loaded once per process.

Searches never raise on bad queries: a query is coerced to ``str``, capped at
:data:`MAX_QUERY_CHARS` characters, and anything that is not valid UTF-8 (lone surrogates, NULs) is
replaced; a query with no usable terms returns ``[]``. Results are deterministic, ties broken by
passage order.

:class:`HTTPRetriever` queries a retrieval server (:mod:`agentrl.envs.search.server`, or Search-R1's
``/retrieve`` server: :mod:`agentrl.envs.search.searchr1`) and turns every transport failure and
malformed answer into a :class:`RetrievalError`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from agentrl.core.errors import AgentRLError
from agentrl.envs.search import searchr1
from agentrl.envs.search.hit import Hit

__all__ = [
    "MAX_QUERY_CHARS",
    "BM25Retriever",
    "DenseRetriever",
    "HTTPRetriever",
    "Hit",
    "HybridRetriever",
    "PassageLike",
    "RetrievalError",
    "Retriever",
    "RetrieverProtocol",
    "clear_retriever_cache",
    "corpus_digest",
    "default_cache_dir",
    "get_retriever",
    "resolve_protocol",
    "sanitize_query",
]

MAX_QUERY_CHARS = 1000
"""Queries are cut to this many characters before they are tokenised or embedded."""

RetrieverKind = Literal["bm25", "dense", "hybrid"]


class RetrievalError(AgentRLError, RuntimeError):
    """A retrieval backend failed (server error, timeout, refused connection)."""


@runtime_checkable
class PassageLike(Protocol):
    """Anything with ``id``, ``title`` and ``text`` attributes (e.g. ``corpus.Passage``), read-only."""

    @property
    def id(self) -> str:
        """The passage's id."""
        ...

    @property
    def title(self) -> str:
        """Its article's title."""
        ...

    @property
    def text(self) -> str:
        """Its text."""
        ...


@runtime_checkable
class Retriever(Protocol):
    """What the Search env needs from a retriever."""

    def search(self, query: str, k: int) -> list[Hit]:
        """The top ``k`` passages for ``query``."""
        ...

    def search_batch(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """:meth:`search` for several queries."""
        ...


def sanitize_query(query: object) -> str:
    r"""A query made safe to tokenise: ``str``, at most :data:`MAX_QUERY_CHARS`, valid UTF-8.

    >>> sanitize_query("a\udc80b\x00c")
    'a?b c'
    >>> len(sanitize_query("x" * 10**6))
    1000
    """
    if isinstance(query, bytes):
        query = query.decode("utf-8", errors="replace")
    elif not isinstance(query, str):
        query = str(query)
    query = query[:MAX_QUERY_CHARS]
    query = query.encode("utf-8", errors="replace").decode("utf-8", errors="replace")
    return query.replace("\x00", " ")


def default_cache_dir() -> Path:
    """``$AGENTRL_CACHE`` or ``~/.cache/agentrl``."""
    env = os.environ.get("AGENTRL_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "agentrl"


# -- corpus digest ---------------------------------------------------------------------------------

_digest_memo: dict[int, tuple[object, str]] = {}
_digest_lock = threading.Lock()


def corpus_digest(passages: Sequence[PassageLike]) -> str:
    """First 16 hex digits of a SHA-256 over the passages' ids, titles and texts (in order).

    Memoised per sequence object, so 32 envs handed the same list hash it once.
    """
    key = id(passages)
    with _digest_lock:
        memo = _digest_memo.get(key)
        if memo is not None and memo[0] is passages:
            return memo[1]
    h = hashlib.sha256()
    for p in passages:
        for part in (p.id, p.title, p.text):
            b = str(part).encode("utf-8", errors="replace")
            h.update(len(b).to_bytes(8, "little"))
            h.update(b)
    digest = h.hexdigest()[:16]
    with _digest_lock:
        if len(_digest_memo) > 64:
            _digest_memo.clear()
        _digest_memo[key] = (passages, digest)
    return digest


def _atomic_build(final: Path, build: Any) -> None:
    """Run ``build(tmp_dir)`` in a temporary sibling directory, then rename it to ``final``."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
    try:
        build(tmp)
        (tmp / "COMPLETE").write_text("ok\n")
        try:
            os.rename(tmp, final)
        except OSError:
            if not (final / "COMPLETE").exists():  # a stale partial directory: replace it
                shutil.rmtree(final, ignore_errors=True)
                os.rename(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _passage_index(passages: Sequence[PassageLike], idx: int, score: float) -> Hit:
    p = passages[idx]
    return Hit(id=str(p.id), title=str(p.title), text=str(p.text), score=float(score))


def _top_k_stable(scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """Indices of the ``k`` highest positive scores, ties broken by lower index."""
    n = scores.shape[0]
    if k <= 0 or n == 0:
        return []
    k = min(k, n)
    kth = np.partition(scores, n - k)[n - k] if k < n else scores.min()
    cand = np.flatnonzero((scores >= kth) & (scores > 0))
    if cand.size == 0:
        return []
    order = np.argsort(-scores[cand], kind="stable")[:k]
    return [(int(cand[i]), float(scores[cand[i]])) for i in order]


# -- BM25 ------------------------------------------------------------------------------------------


class BM25Retriever:
    """BM25 (bm25s, Lucene variant, English stopwords, no stemming) over passages' title and text.

    Args:
        passages: The corpus; kept by reference (never copied).
        cache_dir: Where the index lives; ``None`` builds it in memory only.

    >>> from types import SimpleNamespace as P
    >>> docs = [P(id="1", title="Paris", text="Paris is the capital of France."),
    ...         P(id="2", title="Berlin", text="Berlin is the capital of Germany.")]
    >>> r = BM25Retriever(docs)
    >>> [h.id for h in r.search("capital of Germany", k=2)]
    ['2', '1']
    >>> r.search("", k=3)
    []
    """

    kind = "bm25"

    def __init__(self, passages: Sequence[PassageLike], cache_dir: str | Path | None = None) -> None:
        import bm25s

        self.passages = passages
        self._bm25s = bm25s
        if cache_dir is None:
            self._model = self._build()
            self.index_dir: Path | None = None
            return
        self.index_dir = Path(cache_dir)
        if not (self.index_dir / "COMPLETE").exists():
            _atomic_build(self.index_dir, lambda tmp: self._build().save(str(tmp), show_progress=False))
        self._model = bm25s.BM25.load(str(self.index_dir), mmap=True, show_progress=False)

    def _build(self) -> Any:
        texts = [f"{p.title}\n{p.text}" for p in self.passages]
        tokens = self._bm25s.tokenize(texts, stopwords="en", show_progress=False)
        model = self._bm25s.BM25()
        model.index(tokens, show_progress=False)
        return model

    def _query_ids(self, query: object) -> list[int]:
        q = sanitize_query(query)
        if not q.strip():
            return []
        toks = self._bm25s.tokenize(q, stopwords="en", return_ids=False, show_progress=False)[0]
        vocab = self._model.vocab_dict
        return [vocab[t] for t in toks if t in vocab]

    def search_indices(self, query: object, k: int) -> list[tuple[int, float]]:
        """``(passage index, score)`` of the top ``k`` passages (only positive scores)."""
        try:
            ids = self._query_ids(query)
            if not ids or k <= 0:
                return []
            scores = np.asarray(self._model.get_scores_from_ids(ids), dtype=np.float32)
            return _top_k_stable(scores, int(k))
        except Exception:
            return []

    def search(self, query: str, k: int) -> list[Hit]:
        """The top ``k`` passages for ``query`` (``[]`` when no term matches)."""
        return [_passage_index(self.passages, i, s) for i, s in self.search_indices(query, k)]

    def search_batch(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """:meth:`search` for each query."""
        return [self.search(q, k) for q in queries]


# -- dense -----------------------------------------------------------------------------------------


def load_embedding_model(model_path: str | os.PathLike[str] | None = None) -> Any:
    """The SentenceTransformer at ``model_path`` (default MiniLM), loaded once per process on CPU.

    :func:`agentrl.llm.embedding.load_embedding_model`, with a missing MiniLM reported as
    a :class:`RetrievalError`.
    """
    from agentrl.core.errors import DependencyNotInstalled
    from agentrl.llm.embedding import load_embedding_model as load

    try:
        return load(model_path)
    except DependencyNotInstalled as exc:
        raise RetrievalError(f"the dense retriever needs the MiniLM model: {exc}") from exc


class DenseRetriever:
    r"""Cosine similarity (faiss ``IndexFlatIP`` over normalised sentence embeddings; MiniLM by default).

    Passages are embedded as ``passage_prefix + title + "\n" + text`` and queries as
    ``query_prefix + query``.

    Args:
        passages: The corpus; kept by reference.
        cache_dir: Where the embeddings and index live; ``None`` keeps them in memory only.
        model_path: A local sentence-transformers directory (default: the packaged all-MiniLM-L6-v2);
            e5, bge and other encoders work the same way.
        batch_size: Encoding batch size when building.
        query_prefix: Put before every query; ``None`` picks it from the model's name
            (:func:`~agentrl.llm.embedding.default_prefixes`: ``"query: "`` for e5).
        passage_prefix: Put before every passage; ``None``: by name (``"passage: "`` for e5).
    """

    kind = "dense"

    def __init__(
        self,
        passages: Sequence[PassageLike],
        cache_dir: str | Path | None = None,
        model_path: str | os.PathLike[str] | None = None,
        batch_size: int = 32,
        query_prefix: str | None = None,
        passage_prefix: str | None = None,
    ) -> None:
        import faiss

        from agentrl.llm.embedding import default_prefixes

        self.passages = passages
        self._faiss = faiss
        self.model_path = str(model_path) if model_path else None
        by_name = default_prefixes(self.model_path)
        self.query_prefix = by_name[0] if query_prefix is None else str(query_prefix)
        self.passage_prefix = by_name[1] if passage_prefix is None else str(passage_prefix)
        self._model = load_embedding_model(self.model_path)
        self._encode_lock = threading.Lock()
        self._batch_size = batch_size
        if cache_dir is None:
            self.index_dir: Path | None = None
            self._index = self._build_index(self._embed_corpus())
            return
        self.index_dir = Path(cache_dir)
        if not (self.index_dir / "COMPLETE").exists():

            def build(tmp: Path) -> None:
                emb = self._embed_corpus()
                faiss.write_index(self._build_index(emb), str(tmp / "index.faiss"))

            _atomic_build(self.index_dir, build)
        self._index = self._read_index(self.index_dir / "index.faiss")

    def _read_index(self, path: Path) -> Any:
        faiss = self._faiss
        for flag in ("IO_FLAG_MMAP_IFC", "IO_FLAG_MMAP"):
            value = getattr(faiss, flag, None)
            if value is None:
                continue
            try:
                return faiss.read_index(str(path), value | faiss.IO_FLAG_READ_ONLY)
            except Exception:
                continue
        return faiss.read_index(str(path))

    def _embed_corpus(self) -> np.ndarray:
        texts = [f"{self.passage_prefix}{p.title}\n{p.text}" for p in self.passages]
        if not texts:
            return np.zeros((0, self._model.get_sentence_embedding_dimension() or 384), np.float32)
        with self._encode_lock:
            emb = self._model.encode(
                texts, batch_size=self._batch_size, normalize_embeddings=True,
                convert_to_numpy=True, show_progress_bar=False,
            )
        return np.ascontiguousarray(emb, dtype=np.float32)

    def _build_index(self, emb: np.ndarray) -> Any:
        index = self._faiss.IndexFlatIP(int(emb.shape[1]))
        if emb.shape[0]:
            index.add(emb)
        return index

    def embed_queries(self, queries: Sequence[object]) -> np.ndarray:
        """Normalised embeddings of the sanitised queries, after :attr:`query_prefix` (float32, one row each)."""
        clean = [self.query_prefix + sanitize_query(q) for q in queries]
        with self._encode_lock:
            emb = self._model.encode(
                clean, batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.ascontiguousarray(emb, dtype=np.float32)

    def search_indices_batch(self, queries: Sequence[object], k: int) -> list[list[tuple[int, float]]]:
        """``(passage index, score)`` lists for each query; empty queries give ``[]``."""
        out: list[list[tuple[int, float]]] = [[] for _ in queries]
        n = self._index.ntotal
        live = [i for i, q in enumerate(queries) if sanitize_query(q).strip()]
        if k <= 0 or n == 0 or not live:
            return out
        try:
            emb = self.embed_queries([queries[i] for i in live])
            # ask for a few more than k so that ties at the boundary are broken by passage order
            kk = min(n, int(k) + 8)
            scores, idx = self._index.search(emb, kk)
        except Exception:
            return out
        for row, qi in enumerate(live):
            pairs = [(int(j), float(s)) for j, s in zip(idx[row], scores[row], strict=True) if j >= 0]
            pairs.sort(key=lambda t: (-round(t[1], 6), t[0]))
            out[qi] = pairs[: int(k)]
        return out

    def search_indices(self, query: object, k: int) -> list[tuple[int, float]]:
        """``(passage index, score)`` of the top ``k`` passages."""
        return self.search_indices_batch([query], k)[0]

    def search(self, query: str, k: int) -> list[Hit]:
        """The top ``k`` passages for ``query`` by cosine similarity."""
        return self.search_batch([query], k)[0]

    def search_batch(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """:meth:`search` for several queries, embedded in one batch."""
        return [
            [_passage_index(self.passages, i, s) for i, s in pairs]
            for pairs in self.search_indices_batch(list(queries), k)
        ]


# -- hybrid ----------------------------------------------------------------------------------------


class HybridRetriever:
    """Reciprocal rank fusion of BM25 and dense: ``score = sum 1 / (rrf_k + rank)``.

    Args:
        bm25: A :class:`BM25Retriever`.
        dense: A :class:`DenseRetriever` over the same passages.
        rrf_k: The RRF constant (60, as in Cormack et al.).
        depth: How many candidates each retriever contributes (at least ``k``).
    """

    kind = "hybrid"

    def __init__(self, bm25: BM25Retriever, dense: DenseRetriever, rrf_k: int = 60, depth: int = 50) -> None:
        self.bm25 = bm25
        self.dense = dense
        self.passages = bm25.passages
        self.rrf_k = rrf_k
        self.depth = depth

    def _fuse(self, lists: Sequence[list[tuple[int, float]]], k: int) -> list[tuple[int, float]]:
        fused: dict[int, float] = {}
        for pairs in lists:
            for rank, (idx, _) in enumerate(pairs, start=1):
                fused[idx] = fused.get(idx, 0.0) + 1.0 / (self.rrf_k + rank)
        return sorted(fused.items(), key=lambda t: (-t[1], t[0]))[:k]

    def search_batch(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """Fused top ``k`` for each query."""
        if k <= 0:
            return [[] for _ in queries]
        depth = max(self.depth, int(k))
        dense = self.dense.search_indices_batch(list(queries), depth)
        out = []
        for q, d in zip(queries, dense, strict=True):
            fused = self._fuse([self.bm25.search_indices(q, depth), d], int(k))
            out.append([_passage_index(self.passages, i, s) for i, s in fused])
        return out

    def search(self, query: str, k: int) -> list[Hit]:
        """Fused top ``k`` for ``query``."""
        return self.search_batch([query], k)[0]


# -- process-wide cache ----------------------------------------------------------------------------

_retrievers: dict[tuple[str, ...], Any] = {}
_retrievers_lock = threading.RLock()


def _model_tag(model_path: str | None, passage_prefix: str) -> str:
    """The dense index directory's suffix for a model and passage prefix.

    ``""`` for MiniLM without a passage prefix (the directory every earlier version used), else ``-``
    and 10 hex digits of a SHA-256 over the model's resolved path and the passage prefix.
    """
    if model_path is None and not passage_prefix:
        return ""
    where = str(Path(model_path).expanduser().resolve()) if model_path else "minilm"
    return "-" + hashlib.sha256(f"{where}\0{passage_prefix}".encode()).hexdigest()[:10]


def get_retriever(
    kind: RetrieverKind,
    passages: Sequence[PassageLike],
    cache_dir: str | Path | None = None,
    *,
    model_path: str | os.PathLike[str] | None = None,
    query_prefix: str | None = None,
    passage_prefix: str | None = None,
) -> Retriever:
    """The shared retriever of ``kind`` for ``passages``, built (or loaded from disk) on first use.

    Args:
        kind: ``"bm25"``, ``"dense"`` or ``"hybrid"``.
        passages: The corpus (objects with ``id``, ``title``, ``text``).
        cache_dir: The cache root (default :func:`default_cache_dir`); indexes go to
            ``<cache_dir>/search/<kind>-<digest>`` (dense indexes of another model or passage prefix
            to ``dense-<digest>-<model tag>``).
        model_path: The dense model, a local sentence-transformers directory (default MiniLM);
            ignored by BM25.
        query_prefix: Put before queries (``None``: by the model's name, see :class:`DenseRetriever`).
        passage_prefix: Put before passages (``None``: by the model's name).

    Returns:
        The same object for every call with the same kind, corpus contents and model in this process.
    """
    if kind not in ("bm25", "dense", "hybrid"):
        raise ValueError(f"unknown retriever kind {kind!r}; expected 'bm25', 'dense' or 'hybrid'")
    from agentrl.llm.embedding import default_prefixes

    digest = corpus_digest(passages)
    model = str(model_path) if model_path else None
    by_name = default_prefixes(model)
    qp = by_name[0] if query_prefix is None else str(query_prefix)
    pp = by_name[1] if passage_prefix is None else str(passage_prefix)
    key: tuple[str, ...] = (kind, digest) if kind == "bm25" else (kind, digest, model or "", qp, pp)
    with _retrievers_lock:
        found = _retrievers.get(key)
        if found is not None:
            return found
        root = (Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()) / "search"
        retriever: Any
        if kind == "bm25":
            retriever = BM25Retriever(passages, root / f"bm25-{digest}")
        elif kind == "dense":
            retriever = DenseRetriever(
                passages, root / f"dense-{digest}{_model_tag(model, pp)}", model_path=model,
                query_prefix=qp, passage_prefix=pp,
            )
        else:
            bm25 = get_retriever("bm25", passages, cache_dir)
            dense = get_retriever(
                "dense", passages, cache_dir, model_path=model, query_prefix=qp, passage_prefix=pp
            )
            retriever = HybridRetriever(bm25, dense)  # type: ignore[arg-type]
        _retrievers[key] = retriever
        return retriever


def clear_retriever_cache() -> None:
    """Forget the shared retrievers (tests; the MiniLM model stays loaded)."""
    with _retrievers_lock:
        _retrievers.clear()


# -- HTTP client -----------------------------------------------------------------------------------


RetrieverProtocol = Literal["auto", "agentrl", "searchr1"]


def resolve_protocol(url: str, protocol: str = "auto") -> tuple[str, str, str]:
    """``(protocol, base URL, endpoint)`` for a retrieval server at ``url``.

    ``"agentrl"`` posts to ``<base>/search``; ``"searchr1"`` to ``<base>/retrieve`` (Search-R1's
    server, or ``agentrl serve-retriever``, which answers both). ``"auto"`` picks ``"searchr1"`` when
    ``url`` ends in ``/retrieve`` (the ``search_url`` a Search-R1 config holds), else ``"agentrl"``.

    >>> resolve_protocol("http://127.0.0.1:8000/retrieve")
    ('searchr1', 'http://127.0.0.1:8000', 'http://127.0.0.1:8000/retrieve')
    >>> resolve_protocol("http://127.0.0.1:8765/", "searchr1")[2], resolve_protocol("http://h:1")[2]
    ('http://127.0.0.1:8765/retrieve', 'http://h:1/search')
    """
    if protocol not in ("auto", "agentrl", "searchr1"):
        raise ValueError(f"unknown retriever protocol {protocol!r}; expected 'auto', 'agentrl' or 'searchr1'")
    base = url.rstrip("/")
    suffix = ""
    for known in ("/retrieve", "/search"):
        if base.endswith(known):
            base, suffix = base[: -len(known)], known
    if protocol == "auto":
        protocol = "searchr1" if suffix == "/retrieve" else "agentrl"
    return protocol, base, base + ("/retrieve" if protocol == "searchr1" else "/search")


class HTTPRetriever:
    """A client for a retrieval server: ours (``POST /search``) or Search-R1's (``POST /retrieve``).

    Args:
        url: The server's base URL, e.g. ``http://127.0.0.1:8765``, or its endpoint
            (``http://127.0.0.1:8000/retrieve``).
        timeout_s: Per-request timeout (connect, read, write).
        retries: Extra attempts after a failure (timeouts, refused connections, 5xx).
        protocol: ``"agentrl"``, ``"searchr1"`` or ``"auto"`` (see :func:`resolve_protocol`).

    Raises:
        RetrievalError: From :meth:`search` / :meth:`search_batch` when the server cannot answer or
            its answer is not in the protocol's shape.
        ValueError: An unknown ``protocol``.
    """

    def __init__(
        self, url: str, timeout_s: float = 10.0, retries: int = 1, protocol: RetrieverProtocol = "auto"
    ) -> None:
        import httpx

        self.protocol, self.url, self.endpoint = resolve_protocol(url, protocol)
        self.timeout_s = float(timeout_s)
        self.retries = max(0, int(retries))
        self._httpx = httpx
        self._client = httpx.Client(timeout=httpx.Timeout(self.timeout_s), trust_env=False)

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def __enter__(self) -> HTTPRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        httpx = self._httpx
        endpoint = self.endpoint
        last = "no attempt"
        for _attempt in range(self.retries + 1):
            try:
                resp = self._client.post(endpoint, json=payload)
            except httpx.TimeoutException:
                last = f"timed out after {self.timeout_s:g} s"
                continue
            except httpx.ConnectError as exc:
                last = f"connection failed ({exc})"
                continue
            except httpx.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            if resp.status_code >= 500:
                last = f"server error {resp.status_code}: {resp.text[:200]}"
                continue
            if resp.status_code != 200:
                hint = ""
                if resp.status_code in (404, 405):
                    other = "agentrl" if self.protocol == "searchr1" else "searchr1"
                    hint = f" (does the server speak the other protocol? try retriever_protocol={other!r})"
                raise RetrievalError(
                    f"retrieval server {endpoint} answered {resp.status_code}: {resp.text[:200]}{hint}"
                )
            try:
                return resp.json()
            except ValueError as exc:
                raise RetrievalError(f"retrieval server {endpoint} sent invalid JSON") from exc
        raise RetrievalError(f"retrieval server {endpoint}: {last} (after {self.retries + 1} attempt(s))")

    def search_batch(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """The top ``k`` hits for each query, from the server."""
        if not queries:
            return []
        clean = [sanitize_query(q) for q in queries]
        if self.protocol == "searchr1":
            data = self._post(searchr1.build_request(clean, max(1, int(k)), return_scores=True))
            try:
                return [row[: max(0, int(k))] for row in searchr1.parse_result(data, len(clean))]
            except ValueError as exc:
                raise RetrievalError(
                    f"retrieval server {self.endpoint} sent a malformed Search-R1 answer: {exc}"
                ) from exc
        data = self._post({"queries": clean, "k": int(k)})
        try:
            rows = data["results"]
            if len(rows) != len(clean):
                raise ValueError(f"{len(rows)} result lists for {len(clean)} queries")
            return [[Hit(str(h["id"]), str(h["title"]), str(h["text"]), float(h["score"])) for h in row]
                    for row in rows]
        except (KeyError, TypeError, ValueError) as exc:
            raise RetrievalError(
                f"retrieval server {self.endpoint} sent a malformed answer ({type(exc).__name__}: {exc}); expected "
                '{"results": [[{id, title, text, score}, ...], ...]} (a Search-R1 server? use protocol="searchr1")'
            ) from exc

    def search(self, query: str, k: int) -> list[Hit]:
        """The top ``k`` hits for ``query``, from the server."""
        return self.search_batch([query], k)[0]

    def health(self) -> dict[str, Any]:
        """``GET /health``; raises :class:`RetrievalError` when the server is unreachable."""
        try:
            resp = self._client.get(f"{self.url}/health")
            resp.raise_for_status()
            return resp.json()
        except (self._httpx.HTTPError, ValueError) as exc:
            raise RetrievalError(f"retrieval server {self.url}/health: {exc}") from exc
