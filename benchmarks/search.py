"""``python benchmarks/search.py``: index build times and search latency of the Search-v0 retrievers.

Generates ~``--passages`` passages (the Search-v0 encyclopedia from
:func:`agentrl.envs.search.corpus.build_corpus` when importable, else random-word passages), builds
the BM25 index over all of them and the dense (MiniLM) index over the first ``--dense-passages``
(MiniLM embeds only ~35 passages/s of ~100 words on 2 CPU cores, so the default 20000
takes about 10 minutes; pass a smaller cap for a quick run), then reports the median latency of a
``k=3`` search: BM25, dense and hybrid in-process, and BM25 through the retrieval server (uvicorn in a
thread, :class:`~agentrl.envs.search.retrieval.HTTPRetriever`). Target: BM25 under 5 ms per query.
Indexes are built in a temporary cache directory (``--cache-dir`` to keep them).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["main", "make_passages"]


@dataclass(frozen=True)
class _Passage:
    id: str
    title: str
    text: str


def make_passages(n: int, seed: int = 0) -> tuple[list[Any], str]:
    """About ``n`` passages and a note on where they came from."""
    try:
        from agentrl.envs.search.corpus import build_corpus

        n_entities = max(40, int(n / 2.9) + 1)
        passages = list(build_corpus(seed, n_entities).passages)
        while len(passages) < n:  # rarely: too few passages per entity
            n_entities = int(n_entities * 1.2) + 1
            passages = list(build_corpus(seed, n_entities).passages)
        return passages[:n], f"Search-v0 generated corpus (seed {seed}, {n_entities} entities)"
    except ImportError:
        rng = random.Random(seed)
        vocab = [f"w{i}" for i in range(20000)]
        passages = [
            _Passage(str(i), f"Title {i}", " ".join(rng.choices(vocab, k=rng.randint(60, 120)))) for i in range(n)
        ]
        return passages, "synthetic random-word passages (agentrl.envs.search.corpus not importable)"


def _queries(passages: Sequence[Any], n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        p = passages[rng.randrange(len(passages))]
        words = p.text.split()
        start = rng.randrange(max(1, len(words) - 6))
        out.append(f"{p.title} " + " ".join(words[start : start + 6]))
    return out


def _median_ms(fn: Callable[[str], object], queries: Sequence[str]) -> float:
    fn(queries[0])  # warm-up
    times = []
    for q in queries:
        t = time.perf_counter()
        fn(q)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmark and print a table."""
    parser = argparse.ArgumentParser(prog="python benchmarks/search.py", description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--dense-passages", type=int, default=20_000, help="cap for the dense/hybrid index")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--cache-dir", default=None, help="keep the indexes here (default: a temp dir)")
    parser.add_argument("--no-dense", action="store_true", help="BM25 and the server only")
    args = parser.parse_args(list(argv) if argv is not None else None)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from agentrl.envs.search.retrieval import HTTPRetriever, get_retriever
    from agentrl.envs.search.server import create_app, start_server_thread

    tmp = None
    cache = args.cache_dir
    if cache is None:
        tmp = tempfile.TemporaryDirectory(prefix="agentrl-bench-search-")
        cache = tmp.name
    rows: list[tuple[str, str]] = []

    t = time.perf_counter()
    passages, note = make_passages(args.passages)
    rows.append(("corpus", f"{len(passages)} passages, {note} ({time.perf_counter() - t:.1f} s)"))
    queries = _queries(passages, args.queries)

    t = time.perf_counter()
    bm25 = get_retriever("bm25", passages, cache)
    rows.append(("BM25 build+save+mmap load", f"{time.perf_counter() - t:.1f} s"))
    rows.append(("BM25 search k=3 (median)", f"{_median_ms(lambda q: bm25.search(q, 3), queries):.2f} ms"))

    if not args.no_dense:
        dense_passages = passages[: args.dense_passages]
        t = time.perf_counter()
        dense = get_retriever("dense", dense_passages, cache)
        dt = time.perf_counter() - t
        rows.append((
            f"dense build ({len(dense_passages)} passages)",
            f"{dt:.1f} s incl. model load ({len(dense_passages) / max(dt, 1e-9):.0f} passages/s)",
        ))
        rows.append(("dense search k=3 (median)", f"{_median_ms(lambda q: dense.search(q, 3), queries):.2f} ms"))
        hybrid = get_retriever("hybrid", dense_passages, cache)
        rows.append((
            f"hybrid search k=3 ({len(dense_passages)} passages)",
            f"{_median_ms(lambda q: hybrid.search(q, 3), queries):.2f} ms",
        ))
        bm25_small = get_retriever("bm25", dense_passages, cache)
        rows.append((
            f"BM25 search k=3 ({len(dense_passages)} passages)",
            f"{_median_ms(lambda q: bm25_small.search(q, 3), queries):.2f} ms",
        ))

    handle = start_server_thread(create_app(bm25, "bm25"))
    try:
        with HTTPRetriever(handle.url, timeout_s=10) as client:
            ms = _median_ms(lambda q: client.search(q, 3), queries)
            rows.append(("BM25 via server k=3 (median)", f"{ms:.2f} ms"))
    finally:
        handle.stop()

    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
