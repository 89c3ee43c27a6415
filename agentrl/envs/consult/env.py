"""``AgentRL/PatientConsult-v1``: a doctor-patient consultation with a simulated patient (after Baichuan-M2).

Research use only: the cases, the simulated patients and the rubrics are synthetic teaching material
for training and evaluating agents. Nothing here is medical advice or a clinical tool.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from agentrl.core.actions import Action
from agentrl.core.dataset import DatasetCard, NoTaskDataset
from agentrl.core.env import AgentEnv
from agentrl.core.episode import Turn
from agentrl.core.task import ListTaskSource, Task
from agentrl.core.verify import Score
from agentrl.envs.consult.actions import ConsultActionSet
from agentrl.envs.consult.measurement import run_test
from agentrl.envs.consult.rubric import (
    JUDGE_PROMPT_VERSION,
    SCATTERSHOT_IDEAS,
    ConsultRecord,
    LLMJudge,
    RuleGrader,
    diagnosis_matches,
    split_final,
)
from agentrl.envs.consult.simulator import PatientSimulator, RuleBasedPatient
from agentrl.envs.consult.tasks import Case, build_case_bank, oracle_turns

__all__ = ["REWARD_COMPONENTS", "SYSTEM_PROMPT", "ConsultVerifier", "PatientConsultEnv", "case_to_task"]

SYSTEM_PROMPT = (
    "You are a doctor in a clinic consultation with a patient (a simulation for research; not medical advice). "
    "Take a focused history by asking the patient questions, check for dangerous features, order the "
    "examinations and tests you need, then explain your conclusion to the patient in plain words and give "
    "your diagnosis and a safe management plan. Be kind: the patient may be worried."
)

#: what ``reward_weights`` may weigh (each in [0, 1]): the rubric score, diagnosis accuracy,
#: the share of the case's relevant facts elicited, and efficiency (1 - turns used / max turns)
REWARD_COMPONENTS = ("rubric", "diagnosis", "facts_elicited", "efficiency")


def case_to_task(case: Case) -> Task:
    """The env's task for a case: the patient's opening words, the diagnosis, and the oracle doctor's turns."""
    who = f"{case.name}, a {case.age}-year-old {'woman' if case.sex == 'female' else 'man'}"
    return Task(
        id=case.id,
        prompt=f"Your patient is {who}.\nPatient: {case.opening()}",
        answer=case.diagnosis,
        family=case.specialty,
        oracle_actions=oracle_turns(case),
        metadata={"condition": case.condition, "source": case.source},
    )


class ConsultVerifier:
    """Scores a concluding turn: the case's rubric (rule grader or LLM judge) and the reward weights.

    ``state`` is the env's episode state: ``case``, ``asked``, ``tests``, ``doctor_turns``,
    ``disclosed``, ``turn``, ``max_turns``, ``transcript``.
    """

    def __init__(self, grader: Any, reward_weights: Mapping[str, float]) -> None:
        unknown = sorted(set(reward_weights) - set(REWARD_COMPONENTS))
        if unknown:
            raise ValueError(f"unknown reward component(s) {unknown}; choose from {', '.join(REWARD_COMPONENTS)}")
        if any(w < 0 for w in reward_weights.values()) or sum(reward_weights.values()) <= 0:
            raise ValueError(f"reward_weights must be >= 0 with a positive sum, got {dict(reward_weights)}")
        self.grader = grader
        self.reward_weights = dict(reward_weights)

    def __call__(self, task: Task, answer: str, state: Mapping[str, Any]) -> Score:
        """Grade ``answer`` (the concluding turn, ``""`` when the patient left) in context."""
        case: Case = state["case"]
        record = ConsultRecord(
            asked=frozenset(state["asked"]),
            tests=tuple(state["tests"]),
            doctor_turns=(*state["doctor_turns"], answer),
            final_message=answer,
            transcript=tuple(state["transcript"]),  # with the concluding turn
        )
        rubric = self.grader.grade(case.rubric, record, names=case.names, differential=case.differential)
        relevant = [t for t, fact in case.facts.items() if fact.relevant and fact.present]
        elicited = sum(t in state["disclosed"] for t in relevant) / len(relevant) if relevant else 1.0
        diagnosis, _, _ = split_final(answer)
        components = {
            "rubric": rubric.value,
            "diagnosis": float(diagnosis_matches(diagnosis, case.names, case.differential)),
            "facts_elicited": elicited,
            "efficiency": max(0.0, 1.0 - state["turn"] / state["max_turns"]),
        }
        total = sum(self.reward_weights.values())
        value = sum(w * components[k] for k, w in self.reward_weights.items()) / total
        breakdown = {
            "rubric": rubric.value,
            "diagnosis_correct": components["diagnosis"],
            "facts_elicited": elicited,
            "turns_used": float(state["turn"]),
            "efficiency": components["efficiency"],
            **rubric.breakdown,
        }
        return Score(value, breakdown, rubric.detail)


class PatientConsultEnv(AgentEnv):
    r"""Consult a simulated patient, order tests, and conclude with a diagnosis and a plan.

    **Research use only**: synthetic cases and simulated patients; not medical advice.

    ## Description

    The agent plays the doctor (after Baichuan-M2's dynamic verifier environment). Each case comes
    from a generated case bank (42 conditions over 18 specialties, 4 cases each by default) or from
    an AgentClinic JSONL file, and has atomic facts, test results, a persona and a HealthBench-style
    rubric. The patient discloses only what it is asked (the rule-based simulator leaks nothing and
    contradicts nothing, measured by ``python benchmarks/consult_fidelity.py``).

    ## Action Space

    ``UnicodeText(max_action_chars)``, one of (see :class:`~agentrl.envs.consult.actions.ConsultActionSet`):
    free text spoken to the patient; ``REQUEST TEST: <name>`` lines; or a concluding turn with
    ``DIAGNOSIS: <diagnosis>`` and ``PLAN: <plan>`` lines plus words to the patient.

    ## Observation Space

    ``UnicodeText(max_observation_chars)``: ``Patient: ...`` replies, ``[result] <test>: ...`` lines,
    or ``[error] ...`` (an empty turn, a test that does not exist).

    ## Rewards

    On the concluding turn (or when the patient's patience runs out and they leave): the weighted mean
    of ``reward_weights`` over ``rubric`` (points of met criteria over total positive points, clipped
    to [0, 1]), ``diagnosis`` (synonym-aware accuracy), ``facts_elicited`` and ``efficiency``;
    default: the rubric alone. ``info["reward_components"]`` has all four plus ``turns_used``,
    each criterion's points and ``healthbench_score`` (HealthBench's unclipped per-example score, which
    may be negative: benchmarks average it with ``rubric.healthbench_aggregate``, not the clipped
    reward); ``info["grading"]`` names the grader, and for the LLM judge its model
    and prompt version. Other turns: 0. Truncation by the turn budget: 0 (no conclusion).

    ## Starting State

    A case drawn with ``np_random`` (or chosen by ``options``); the patient has said why they came.

    ## Episode End

    Terminated by a diagnosis (``done_reason="answered"``) or by the patient leaving
    (``"patient_left"``); truncated after ``max_turns`` (20) turns.

    ## Arguments

    * ``cases``: ``"generated"`` (default), a path to an AgentClinic JSONL file, or a list of ``Case``.
    * ``cases_per_condition`` (4), ``bank_seed`` (0), ``conditions``, ``specialties``: the generated bank.
    * ``rubrics``: a HealthBench-style rubric JSONL file; rows replace the rubric of the case they name.
      With a ``cases`` file the env is a :class:`~agentrl.core.dataset.TaskDataset`: ``agentrl bench
      --all-tasks`` sweeps its cases in file order, scored by HealthBench's score (the clipped mean of the
      unclipped per-case scores).
    * ``simulator``: ``"rule"`` (default), ``"llm"`` (needs ``simulator_backend``) or a ``PatientSimulator``.
    * ``simulator_backend``: an ``LLMBackend`` or a backend name of ``agentrl.agents`` (``"smollm2"``,
      ``"openai"``...), with ``simulator_backend_options``.
    * ``semantic`` (True): MiniLM matching of the doctor's questions (False: keywords only).
    * ``grader``: ``"rule"`` (default) or ``"llm"`` with ``judge_backend`` (and ``judge_backend_options``,
      ``judge_cache``: a JSONL file of cached verdicts).
    * ``scattershot_ideas`` (8): the rule grader's guard against plan stuffing: a conclusion that recommends this
      many treatment ideas of *other* conditions of the catalog meets no plan criterion
      (:meth:`~agentrl.envs.consult.rubric.RuleGrader.scattershot`); ``None`` grades each plan criterion by its
      keywords alone, as v0 did.
    * ``judge_prompt_version``: the LLM judge's prompt, ``"consult-judge-v2"`` (default: the conversation held as
      quoted data, so that a doctor's fake ``SYSTEM:`` turn, rubric lines or verdict are not read as
      instructions) or v0's ``"consult-judge-v1"``.
    * ``reward_weights``: e.g. ``{"rubric": 0.7, "diagnosis": 0.3}``.
    * ``max_turns`` (20), ``max_topics_per_turn`` (3).

    ## Version History

    * v1: the rule grader refuses plan stuffing: a conclusion that names eight or more treatment ideas of
      other conditions meets no plan criterion (``agentrl redteam``'s ``plan-stuffing`` probe scored 0.18
      with a plan listing every treatment of the catalog and no diagnosis; now 0). Other rewards are
      unchanged: no oracle consultation names any, a verbose plan (analgesia, fluids, rest, antibiotics,
      hospital if worse) names at most five. With ``grader="llm"``, the judge reads the conversation as
      quoted data (prompt ``consult-judge-v2``): a fake ``SYSTEM:`` turn, rubric lines and a verdict in the
      doctor's reply took a SmolLM2 judge from 0 to 0.54 under v1 (``inject-judge``).
    * v0 (deprecated, one release): initial release (on the episode contract since issue 19); each plan
      criterion met by its keywords alone (``scattershot_ideas=None``), the judge's prompt
      ``consult-judge-v1``.

    >>> import gymnasium as gym, agentrl
    >>> env = gym.make("AgentRL/PatientConsult-v1", semantic=False)
    >>> observation, info = env.reset(seed=0)
    >>> observation.startswith("Your patient is")
    True
    >>> for turn in env.unwrapped.task.oracle_actions:
    ...     observation, reward, terminated, truncated, info = env.step(turn)
    >>> reward, info["done_reason"]
    (1.0, 'answered')
    >>> env.close()
    """

    metadata: dict[str, Any] = {**AgentEnv.metadata, "stop_sequences": ()}

    def __init__(
        self,
        *,
        cases: str | os.PathLike[str] | Sequence[Case] = "generated",
        cases_per_condition: int = 4,
        bank_seed: int = 0,
        conditions: Sequence[str] | None = None,
        specialties: Sequence[str] | None = None,
        rubrics: str | os.PathLike[str] | None = None,
        simulator: str | PatientSimulator = "rule",
        simulator_backend: Any = None,
        simulator_backend_options: Mapping[str, Any] | None = None,
        semantic: bool = True,
        grader: str = "rule",
        judge_backend: Any = None,
        judge_backend_options: Mapping[str, Any] | None = None,
        judge_cache: str | os.PathLike[str] | None = None,
        reward_weights: Mapping[str, float] | None = None,
        scattershot_ideas: int | None = SCATTERSHOT_IDEAS,
        judge_prompt_version: str = JUDGE_PROMPT_VERSION,
        max_turns: int = 20,
        max_topics_per_turn: int = 3,
        max_observation_chars: int = 8_000,
        max_action_chars: int = 8_000,
        render_mode: str | None = None,
    ) -> None:
        bank = self._load_cases(cases, cases_per_condition, bank_seed, conditions, specialties)
        from_file = isinstance(cases, os.PathLike) or (isinstance(cases, str) and cases != "generated")
        self._dataset_files: tuple[str, ...] = () if not from_file else tuple(
            os.path.abspath(path) for path in (cases, rubrics) if isinstance(path, (str, os.PathLike))
        )
        if rubrics is not None:
            from agentrl.envs.consult.datasets import attach_rubrics

            bank = attach_rubrics(bank, rubrics)
        self.cases: dict[str, Case] = {case.id: case for case in bank}
        self.simulator = self._make_simulator(
            simulator, simulator_backend, simulator_backend_options, semantic, max_topics_per_turn
        )
        if grader == "rule":
            grading: Any = RuleGrader(scattershot_ideas=scattershot_ideas)
        elif grader == "llm":
            if judge_backend is None:
                raise ValueError("grader='llm' needs judge_backend= (an LLMBackend or a backend name such as 'openai')")
            grading = LLMJudge(_backend(judge_backend, judge_backend_options), cache_path=judge_cache,
                               prompt_version=judge_prompt_version)
        else:
            raise ValueError(f"grader must be 'rule' or 'llm', got {grader!r}")
        if grader == "rule":
            free_text = sorted({c.id for case in bank for c in case.rubric if c.kind == "judge"})
            if free_text:
                raise ValueError(
                    f"the rubrics have free-text criteria ({', '.join(free_text[:3])}...) that only an LLM judge can "
                    "grade; pass grader='llm' and judge_backend=..."
                )
        self.grader = grading
        super().__init__(
            task_source=ListTaskSource([case_to_task(case) for case in bank]),
            action_set=ConsultActionSet(),
            verifier=ConsultVerifier(grading, reward_weights or {"rubric": 1.0}),
            sandbox_factory=None,
            max_turns=max_turns,
            max_observation_chars=max_observation_chars,
            max_action_chars=max_action_chars,
            render_mode=render_mode,
            system_prompt=SYSTEM_PROMPT,
        )
        self._reset_record()

    # -- construction helpers ----------------------------------------------------------------
    @staticmethod
    def _load_cases(cases: Any, per_condition: int, bank_seed: int, conditions: Any, specialties: Any) -> list[Case]:
        if isinstance(cases, str) and cases == "generated":
            return build_case_bank(per_condition, bank_seed=bank_seed, conditions=conditions, specialties=specialties)
        if isinstance(cases, (str, os.PathLike)):
            from agentrl.envs.consult.datasets import load_agentclinic

            return load_agentclinic(cases)
        loaded = list(cases)
        if not loaded or not all(isinstance(case, Case) for case in loaded):
            raise TypeError(
                "cases must be 'generated', a path to an AgentClinic JSONL file, or a non-empty list of Case"
            )
        return loaded

    @staticmethod
    def _make_simulator(
        simulator: Any, backend: Any, options: Mapping[str, Any] | None, semantic: bool, max_topics: int
    ) -> PatientSimulator:
        if simulator == "rule":
            return RuleBasedPatient(semantic=semantic, max_topics_per_turn=max_topics)
        if simulator == "llm":
            if backend is None:
                raise ValueError("simulator='llm' needs simulator_backend= (an LLMBackend or a name such as 'smollm2')")
            from agentrl.envs.consult.llm_patient import LLMPatient

            rules = RuleBasedPatient(semantic=semantic, max_topics_per_turn=max_topics)
            return LLMPatient(_backend(backend, options), rules=rules)
        if isinstance(simulator, PatientSimulator):
            return simulator
        raise ValueError(f"simulator must be 'rule', 'llm' or a PatientSimulator, got {simulator!r}")

    @classmethod
    def lock_parts(cls, env_kwargs: Mapping[str, Any]) -> dict[str, str]:
        """What grades and what plays the patient, for ``agentrl bench``'s env lock.

        Each one's model and a hash of its prompt: a new judge model or prompt makes old and new scores incomparable.

        >>> PatientConsultEnv.lock_parts({})
        {'judge': 'rule', 'patient': 'rule'}
        >>> parts = PatientConsultEnv.lock_parts({"grader": "llm", "judge_backend": "openai",
        ...                                       "judge_backend_options": {"model": "qwen"}})
        >>> parts["judge"].startswith("llm openai:qwen prompt consult-judge-v2 sha256:")
        True
        """
        import hashlib
        import inspect

        def model(backend: Any, options: Any) -> str:
            if isinstance(backend, str):
                options = dict(options or {})
                name = options.get("model") or options.get("model_path")
                return f"{backend}:{name}" if name else backend
            from agentrl.envs.consult.rubric import backend_model_name

            return backend_model_name(backend) if backend is not None else "none"

        def sha(*texts: str) -> str:
            return "sha256:" + hashlib.sha256("\0".join(texts).encode()).hexdigest()[:12]

        parts = {"judge": "rule", "patient": "rule"}
        if env_kwargs.get("grader", "rule") == "llm":
            from agentrl.envs.consult import rubric

            version = str(env_kwargs.get("judge_prompt_version", JUDGE_PROMPT_VERSION))
            prompt = sha(version, rubric._JUDGE_SYSTEM, rubric._JUDGE_DATA,
                         inspect.getsource(rubric.judge_conversation))
            judge = model(env_kwargs.get("judge_backend"), env_kwargs.get("judge_backend_options"))
            parts["judge"] = f"llm {judge} prompt {version} {prompt}"
        simulator = env_kwargs.get("simulator", "rule")
        if simulator == "llm":
            from agentrl.envs.consult import llm_patient

            prompt = sha(llm_patient.PROMPT_VERSION, inspect.getsource(llm_patient.LLMPatient.reset))
            patient = model(env_kwargs.get("simulator_backend"), env_kwargs.get("simulator_backend_options"))
            parts["patient"] = f"llm {patient} prompt {llm_patient.PROMPT_VERSION} {prompt}"
        elif not isinstance(simulator, str):
            parts["patient"] = type(simulator).__name__
        return parts

    # -- the episode -------------------------------------------------------------------------
    def _reset_record(self) -> None:
        self._asked: set[str] = set()
        self._disclosed: set[str] = set()
        self._tests: list[str] = []
        self._doctor_turns: list[str] = []
        self._left = False

    def dataset_card(self) -> DatasetCard:
        """The cases file's card (and the rubric file's, when given), scored by the HealthBench score.

        Raises:
            NoTaskDataset: the cases are the generated bank or a list in memory (no file to name).
        """
        if not self._dataset_files:
            raise NoTaskDataset(
                "AgentRL/PatientConsult-v1 here plays its generated case bank (no dataset file); to sweep a dataset "
                "give its file: --env-kwarg cases=path/to/agentclinic_medqa.jsonl (and rubrics=path/to/"
                "healthbench.jsonl for HealthBench rubrics)"
            )
        return DatasetCard(name="AgentClinic cases" + (" + HealthBench rubrics" if len(self._dataset_files) > 1
                                                      else ""),
                           path=self._dataset_files[0], metric="HealthBench score", score_from="healthbench_score",
                           files=self._dataset_files)

    @property
    def case(self) -> Case:
        """The current case (privileged: the oracle and tests read it; a policy should not)."""
        return self.cases[self.task.id]

    def start_episode(self, task: Task) -> None:
        """A fresh record, and the patient for this case (seeded from ``np_random``)."""
        self._reset_record()
        seed = int(self.np_random.integers(2**63 - 1))
        self.simulator.reset(self.cases[task.id].patient_view(), np.random.default_rng(seed))

    def initial_observation(self, task: Task) -> str:
        """Who the patient is and what they said, then the action format."""
        return f"{task.prompt}\n\n{self.action_set.describe()}"

    def execute_action(self, action: Action) -> tuple[str, str | None]:
        """Speak to the patient or run tests."""
        self._doctor_turns.append(action.raw or action.content)
        if action.kind == "test":
            return self._run_tests(action.args.get("tests", ()))
        reply = self.simulator.respond(action.content)
        self._asked.update(reply.answered)
        self._asked.update(reply.withheld)
        self._disclosed.update(reply.disclosed)
        self._left = reply.left
        return f"Patient: {reply.text}", None

    def _run_tests(self, names: Sequence[str]) -> tuple[str, str | None]:
        case = self.case
        lines, errors = [], []
        for name in names:
            outcome = run_test(name, case.tests, sex=case.sex)
            if outcome.spec is None:
                lines.append(f"[error] {outcome.error}")
                errors.append(str(outcome.error))
            else:
                self._tests.append(outcome.spec.key)
                lines.append(outcome.text)
        return "\n".join(lines), ("; ".join(errors) or None)

    def end_of_episode(self) -> str | None:
        """The patient left: the consultation is scored as it stands (no diagnosis)."""
        return "patient_left" if self._left else None

    def episode_state(self, turn: Turn[str] | None = None) -> Mapping[str, Any]:
        """The consultation record the verifier grades; ``turn``, the turn being scored, ends the transcript."""
        pending: tuple[tuple[str, str], ...] = ()
        if turn is not None:  # this turn is not in the transcript yet: a judge reads it all
            pending = (("agent", turn.action if isinstance(turn.action, str) else ""),)
            if turn.answer is None and turn.parsed is not None and turn.parsed.kind != "test" and turn.observation:
                pending += (("env", turn.observation),)  # the patient's reply (when they left)
        return {
            "case": self.case,
            "asked": frozenset(self._asked),
            "tests": tuple(self._tests),
            "doctor_turns": tuple(self._doctor_turns),
            "disclosed": frozenset(self._disclosed),
            "turn": self._turn,
            "max_turns": self.max_turns,
            "transcript": (*self.transcript, *pending),
        }

    def final_observation(self, score: Score) -> str:
        """The end of the consultation."""
        rubric = score.breakdown.get("rubric", score.value)
        return f"[consultation over] rubric score {rubric:.2f} (reward {score.value:.2f})."

    def finish_turn(self, turn: Turn[str]) -> None:
        """``info["consult"]`` tracks the consultation; at the end ``info["grading"]`` says who graded."""
        super().finish_turn(turn)
        turn.info["consult"] = {
            "topics_asked": len(self._asked),
            "facts_disclosed": len(self._disclosed),
            "tests_ordered": len(self._tests),
            "patience_left": int(self.simulator.patience_left),
        }
        if turn.terminated:
            detail = json.loads(turn.score.detail) if turn.score is not None and turn.score.detail else {}
            turn.info["grading"] = {
                k: v for k, v in detail.items() if k in ("grader", "model", "prompt_version", "unparsed")
            }


def _backend(backend: Any, options: Mapping[str, Any] | None) -> Any:
    if isinstance(backend, str):
        from agentrl.llm.registry import make_backend

        return make_backend(backend, options)
    if not callable(getattr(backend, "generate", None)):
        raise TypeError(f"expected an LLMBackend (with .generate) or a backend name, got {type(backend).__name__}")
    return backend
