"""Multi-hop knowledge QA with a local retriever: ``AgentRL/Search-v0``.

One file per job, as every domain (``agentrl new-domain`` writes the same template):

* ``env.py``: :class:`~agentrl.envs.search.env.SearchEnv` and its Gymnasium-style docstring;
* ``actions.py``: the Search-R1 action format, ``<search>query</search>`` and ``<answer>...</answer>``;
* ``verify.py``: :class:`~agentrl.envs.search.verify.QAVerifier`, exact match and token F1 after SQuAD's answer
  normalisation (as Search-R1 and FlashRAG score);
* ``tasks.py``: the procedural 1-4 hop questions, seeded, with answers true by construction, over ``corpus.py``,
  the generated encyclopedia of fictional entities (the retrieval corpus);
* ``datasets.py``: loaders of Search-R1's and FlashRAG's own files (QA JSONL, corpus JSONL);
* ``retrieval.py``: the local retrievers (BM25, dense, hybrid) and the client of a retrieval server; ``hit.py``:
  the retrieved passage every retriever and both wire protocols share;
* ``server.py``: the retrieval server of ``agentrl serve-retriever``; ``searchr1.py``: Search-R1's
  ``POST /retrieve`` protocol, both sides (the wire shapes only).

The id is registered with the other built-in ids in :mod:`agentrl.envs`.
"""

from __future__ import annotations

__all__: list[str] = []
