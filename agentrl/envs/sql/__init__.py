"""Text-to-SQL on real SQLite databases: ``AgentRL/SQL-v0``.

One file per job, as every domain (``agentrl new-domain`` writes the same template):

* ``env.py``: :class:`~agentrl.envs.sql.env.SQLEnv` and its Gymnasium-style docstring;
* ``actions.py``: ``<sql>`` to explore, ``<solution>`` to submit;
* ``verify.py``: :class:`~agentrl.envs.sql.verify.SQLVerifier` and execution accuracy under the official
  Spider and BIRD rules (:func:`~agentrl.envs.sql.verify.score_sql`, a pure function with doctests);
* ``tasks.py``: the procedural questions, seeded, with their gold SQL and oracles, over ``databases.py``,
  the generated SQLite databases;
* ``datasets.py``: loaders of Spider's and BIRD's own directory layouts.

The id is registered with the other built-in ids in :mod:`agentrl.envs`.
"""

from __future__ import annotations

__all__: list[str] = []
