"""Benchmarks, runnable as modules (``python -m agentrl.bench.sandbox``).

``agentrl bench`` (the agent benchmark) lives in :mod:`agentrl.bench.runner` (the async, resumable
runner), :mod:`~agentrl.bench.results` (the results file), :mod:`~agentrl.bench.stats`,
:mod:`~agentrl.bench.report` (``report.html``), :mod:`~agentrl.bench.compare`,
:mod:`~agentrl.bench.suites` and :mod:`~agentrl.bench.concurrency` (``python -m
agentrl.bench.concurrency``: the speed-up of ``--concurrency``). Nothing is imported here, so that
``import agentrl.bench.X`` stays light.
"""
