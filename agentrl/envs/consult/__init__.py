"""Doctor-patient consultation: ``AgentRL/PatientConsult-v1`` (research use only, no medical advice).

One file per job:

* ``env.py``: :class:`~agentrl.envs.consult.env.PatientConsultEnv` and its Gymnasium-style docstring, and
  :class:`~agentrl.envs.consult.env.ConsultVerifier`, the verifier (the case's rubric, weighted into the reward);
* ``actions.py``: the doctor's action format (speak, ``REQUEST TEST:``, ``DIAGNOSIS:``/``PLAN:``);
* ``catalog.py``: the two fixed vocabularies, the topics a patient can be asked about and the tests (data in
  ``data/catalog.json``);
* ``conditions/``: the condition templates, JSON data files under ``conditions/data/`` checked at load
  against ``conditions/schema.py``;
* ``tasks.py``: the cases (facts, test results, a rubric) and the seeded case bank generated from the templates,
  and the oracle doctor; ``records.py``: the checked JSON <-> dataclass code of the data files;
* ``simulator.py``, ``matching.py``, ``persona.py``, ``measurement.py``: the rule-based patient (its
  fact, affect and measurement units); ``llm_patient.py`` and ``checker.py``: the LLM patient and the
  fact checker that keeps it honest;
* ``rubric.py``: HealthBench-style rubrics, the rule-based grader and the LLM judge;
* ``datasets.py``: loaders of AgentClinic's cases and HealthBench-style rubrics from their own files;
  ``results_fidelity.py``: every test result of an AgentClinic case reachable by name, none contradicted.

The id is registered with the other built-in ids in :mod:`agentrl.envs`. Nothing is re-exported:
importing a submodule (``agentrl.envs.consult.catalog``) runs this file first, so it stays free of
imports (no Gymnasium, no case bank); import from the submodules.
"""

from __future__ import annotations

__all__: list[str] = []
