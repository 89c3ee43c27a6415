"""``AgentRL/Search-v0``: multi-hop knowledge QA with a real local retriever (after Search-R1, VerlTool VT-Search)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Literal

from agentrl.core.actions import Action
from agentrl.core.dataset import DatasetCard, NoTaskDataset
from agentrl.core.env import AgentEnv
from agentrl.core.task import Task
from agentrl.core.text import truncate_middle
from agentrl.envs.search.actions import SearchActionSet
from agentrl.envs.search.verify import QAVerifier

__all__ = ["SYSTEM_PROMPT", "SearchEnv", "render_hits"]

SYSTEM_PROMPT = (
    "You answer questions about a knowledge base you cannot see. Reason step by step inside <think> and "
    "</think> if you like, search whenever you lack a fact, and follow the chain of facts one search at a time."
)


def render_hits(hits: Sequence[Any], max_passage_chars: int) -> str:
    """Search results as Search-R1's ``<information>`` block.

    >>> from types import SimpleNamespace as Hit
    >>> print(render_hits([Hit(title="Orvane", text="Orvane is a city.")], 100))
    <information>Doc 1 (Title: "Orvane") Orvane is a city.</information>
    """
    if not hits:
        return "<information>(no results)</information>"
    docs = [
        f'Doc {rank} (Title: "{hit.title}") {truncate_middle(hit.text, max_passage_chars)}'
        for rank, hit in enumerate(hits, start=1)
    ]
    return "<information>" + "\n".join(docs) + "</information>"


class SearchEnv(AgentEnv):
    r"""Answer a (multi-hop) question by searching a knowledge base, then ``<answer>``.

    ## Description

    After Search-R1: the agent reasons, issues ``<search>query</search>`` and gets the top-``k``
    passages back in an ``<information>`` block, and ends with ``<answer>...</answer>``. Questions come
    from a generated encyclopedia of fictional people, places, organisations and events (1-4 hop
    bridge and comparison questions whose answers hold by construction), or from Search-R1 / FlashRAG
    files (a JSONL corpus of ``{"id", "contents"}`` and QA files of ``{"question", "golden_answers"}``).

    ## Action Space

    ``UnicodeText(max_action_chars)``; see :class:`~agentrl.envs.search.actions.SearchActionSet`.

    ## Observation Space

    ``UnicodeText(max_observation_chars)``: the question and the format, then ``<information>`` blocks
    (with the searches left) or ``[error] ...``.

    ## Rewards

    On ``<answer>``: exact match after SQuAD normalisation (``reward_mode="em"``) or token F1
    (``"f1"``); ``info["reward_components"]`` has ``em``, ``f1`` and ``format``. Other turns: 0.

    ## Starting State

    A question drawn with ``np_random`` (or chosen by ``options``); no searches made.

    ## Episode End

    Terminated by an answer; truncated after ``max_turns`` turns. After ``max_searches`` searches, a
    further search is refused with an error observation (it still costs a turn).

    ## Arguments

    * ``retriever``: ``"bm25"`` (default), ``"dense"`` (sentence embeddings + faiss) or ``"hybrid"``;
      ``retriever_model``: the dense model, a local sentence-transformers directory (default: the
      packaged all-MiniLM-L6-v2; e5 works), with ``query_prefix`` / ``passage_prefix`` (``None``: by
      the model's name, ``"query: "`` / ``"passage: "`` for e5).
    * ``retriever_url``: a retrieval server to share one index between processes:
      ``agentrl serve-retriever`` or Search-R1's own ``retrieval_server.py``;
      ``retriever_protocol``: ``"agentrl"`` (``POST /search``), ``"searchr1"`` (``POST /retrieve``) or
      ``"auto"`` (``"searchr1"`` when the URL ends in ``/retrieve``).
    * ``k`` (3), ``max_searches`` (4), ``max_turns`` (``max_searches + 1``), ``max_passage_chars`` (600).
    * ``kinds``: question kinds (``single``, ``bridge2``, ``comparison``, ``bridge3``, ``bridge4``);
      ``corpus_seed``, ``n_entities``: the generated encyclopedia.
    * ``corpus`` and ``dataset``: FlashRAG corpus JSONL and QA JSONL paths instead. The env is then a
      :class:`~agentrl.core.dataset.TaskDataset`: ``agentrl bench --all-tasks`` sweeps the QA file in order,
      scored by EM (or mean F1 with ``reward_mode="f1"``).
    * ``reward_mode``: ``"em"`` or ``"f1"``.

    ## Version History

    * v0: initial release.

    >>> import gymnasium as gym, agentrl
    >>> env = gym.make("AgentRL/Search-v0")
    >>> observation, info = env.reset(seed=0)
    >>> "<search>" in observation
    True
    >>> env.close()
    """

    metadata: dict[str, Any] = {**AgentEnv.metadata, "stop_sequences": ("</search>", "</answer>")}

    def __init__(
        self,
        *,
        retriever: Literal["bm25", "dense", "hybrid"] = "bm25",
        retriever_url: str | None = None,
        retriever_protocol: Literal["auto", "agentrl", "searchr1"] = "auto",
        retriever_model: str | os.PathLike[str] | None = None,
        query_prefix: str | None = None,
        passage_prefix: str | None = None,
        k: int = 3,
        max_searches: int = 4,
        max_turns: int | None = None,
        max_passage_chars: int = 600,
        kinds: Sequence[str] | None = None,
        corpus_seed: int = 0,
        n_entities: int = 3000,
        corpus: str | os.PathLike[str] | None = None,
        dataset: str | os.PathLike[str] | None = None,
        reward_mode: Literal["em", "f1"] = "em",
        cache_dir: str | None = None,
        max_observation_chars: int = 16_000,
        max_action_chars: int = 65_536,
        render_mode: str | None = None,
    ) -> None:
        if (corpus is None) != (dataset is None):
            raise ValueError("pass both corpus= (a FlashRAG corpus JSONL) and dataset= (its QA JSONL), or neither")
        if k < 1 or max_searches < 0:
            raise ValueError(f"k must be >= 1 and max_searches >= 0, got k={k}, max_searches={max_searches}")
        if retriever_protocol not in ("auto", "agentrl", "searchr1"):
            raise ValueError(
                f"retriever_protocol must be 'auto', 'agentrl' or 'searchr1', got {retriever_protocol!r}"
            )
        dense_options = retriever_model is not None or query_prefix is not None or passage_prefix is not None
        if dense_options and (retriever_url or retriever == "bm25"):
            raise ValueError(
                "retriever_model, query_prefix and passage_prefix choose the local dense model: use them with "
                "retriever='dense' or 'hybrid' and no retriever_url (a server's model is set where it runs: "
                "agentrl serve-retriever --retriever-model PATH)"
            )
        if corpus is not None and dataset is not None:
            from agentrl.envs.search.datasets import FlashRAGSource, load_corpus_jsonl

            task_source: Any = FlashRAGSource(dataset)
            passages_loader = lambda: load_corpus_jsonl(corpus)  # noqa: E731  (built only when needed)
        else:
            from agentrl.envs.search.corpus import build_corpus
            from agentrl.envs.search.tasks import ProceduralSearchSource

            task_source = ProceduralSearchSource(kinds=kinds, corpus_seed=corpus_seed, n_entities=n_entities)
            passages_loader = lambda: build_corpus(corpus_seed, n_entities).passages  # noqa: E731
        self.k = k
        self.max_searches = max_searches
        self.max_passage_chars = max_passage_chars
        self.retriever_kind = retriever
        self.retriever_url = retriever_url
        self.retriever_protocol = retriever_protocol
        self._dense_options: dict[str, Any] = {
            "model_path": retriever_model, "query_prefix": query_prefix, "passage_prefix": passage_prefix,
        }
        self._passages_loader = passages_loader
        self._corpus_path = None if corpus is None else os.path.abspath(corpus)
        self.reward_mode = reward_mode
        self._cache_dir = cache_dir
        self._retriever: Any = None
        self._searches = 0
        super().__init__(
            task_source=task_source,
            action_set=SearchActionSet(),
            verifier=QAVerifier(reward_mode),
            sandbox_factory=None,
            max_turns=max_turns if max_turns is not None else max_searches + 1,
            max_observation_chars=max_observation_chars,
            max_action_chars=max_action_chars,
            render_mode=render_mode,
            system_prompt=SYSTEM_PROMPT,
        )

    def dataset_card(self) -> DatasetCard:
        """The FlashRAG QA file's card (the corpus is one of its files): EM, or mean F1.

        Raises:
            NoTaskDataset: the env generates its questions (no ``dataset=``).
        """
        path = getattr(self.task_source, "path", None)
        if path is None or self._corpus_path is None:
            raise NoTaskDataset(
                "AgentRL/Search-v0 generates its questions, which have no end; to sweep a dataset give its files: "
                "--env-kwarg dataset=path/to/test.jsonl --env-kwarg corpus=path/to/corpus.jsonl (FlashRAG format)"
            )
        qa = os.path.abspath(path)
        if self.reward_mode == "f1":
            return DatasetCard(name="FlashRAG QA", path=qa, metric="F1", score_from="reward",
                               files=(qa, self._corpus_path))
        return DatasetCard(name="FlashRAG QA", path=qa, metric="EM", files=(qa, self._corpus_path))

    @property
    def retriever(self) -> Any:
        """The retriever: shared in-process index, or an HTTP client of the retrieval server."""
        if self._retriever is None:
            from agentrl.envs.search.retrieval import HTTPRetriever, get_retriever

            if self.retriever_url:
                self._retriever = HTTPRetriever(self.retriever_url, protocol=self.retriever_protocol)
            else:
                self._retriever = get_retriever(
                    self.retriever_kind, self._passages_loader(), cache_dir=self._cache_dir, **self._dense_options
                )
        return self._retriever

    def release(self) -> None:
        """Close the HTTP client of a retrieval server (a shared in-process index stays loaded)."""
        super().release()
        if self.retriever_url and self._retriever is not None:
            self._retriever.close()
            self._retriever = None

    def start_episode(self, task: Task) -> None:
        """Reset the search count."""
        self._searches = 0

    def initial_observation(self, task: Task) -> str:
        """The question and the action format."""
        return f"Question: {task.prompt}\n\n{self.action_set.describe()}"

    def execute_action(self, action: Action) -> tuple[str, str | None]:
        """Run one search; a retriever failure is a tool error for this turn, not a crash."""
        from agentrl.envs.search.retrieval import RetrievalError

        if self._searches >= self.max_searches:
            message = f"search budget spent ({self.max_searches} searches); give your answer in <answer></answer>"
            return f"[error] {message}", message
        self._searches += 1
        try:
            hits = self.retriever.search(action.content, self.k)
        except RetrievalError as exc:
            return f"[tool error] {exc}", str(exc)
        left = self.max_searches - self._searches
        return f"{render_hits(hits, self.max_passage_chars)}\n[{left} search{'es' if left != 1 else ''} left]", None
