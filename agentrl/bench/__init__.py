"""``agentrl bench``: the benchmark users run on their agents.

It lives in :mod:`agentrl.bench.runner` (the async, resumable runner), :mod:`~agentrl.bench.results`
(the results file), :mod:`~agentrl.bench.stats`, :mod:`~agentrl.bench.report` (``report.html``),
:mod:`~agentrl.bench.compare`, :mod:`~agentrl.bench.suites`, :mod:`~agentrl.bench.sweep` and, for
multi-agent play, :mod:`~agentrl.bench.league` and :mod:`~agentrl.bench.multiagent`. The scripts that
measure this project's own speed (``python benchmarks/concurrency.py``: the speed-up of ``--concurrency``;
``python benchmarks/sandbox.py``...) are not part of the package: they live in the repository's
``benchmarks/`` folder. Nothing is imported here, so that ``import agentrl.bench.X`` stays light.
"""
