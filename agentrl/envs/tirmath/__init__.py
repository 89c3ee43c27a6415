r"""Tool-integrated math: ``AgentRL/TIRMath-v0``.

One file per job, as every domain (``agentrl new-domain`` writes the same template):

* ``env.py``: :class:`~agentrl.envs.tirmath.env.TIRMathEnv` and its Gymnasium-style docstring;
* ``actions.py``: the TIR action format (fenced python blocks to run, ``\boxed{}`` to answer);
* ``verify.py``: the math-verify verifier, with ``grader.py`` its helper process (a deadline per comparison);
* ``tasks.py``: the procedural problems, seeded, and their oracles;
* ``datasets.py``: GSM8K / MATH / simple JSONL loaders.

The id is registered with the other built-in ids in :mod:`agentrl.envs`.
"""

from __future__ import annotations

__all__: list[str] = []
