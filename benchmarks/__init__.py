"""AgentRL's own speed and quality measurements: scripts run from the repository root (``python benchmarks/X.py``).

They are not part of the ``agentrl`` package (not in the wheel, and nothing in ``agentrl`` imports them);
``agentrl bench``, the benchmark users run, is :mod:`agentrl.bench`. Recorded outputs are in
``benchmarks/results/``. The workloads the scripts share with the tests (``LatencyEnv``, ``InstantEnv``,
``ScriptedAgent``...) live in :mod:`agentrl.rollout.workloads`. This file makes ``benchmarks`` a regular
package, so that tests (and pytest's doctest collection) import the scripts as ``benchmarks.X``.
"""
