"""PatientConsult with LLMs: the LLM-backed patient and the LLM judge, scripted and against a local server.

The served model is the tiny random one (:func:`~agentrl.llm.tiny.build_tiny_model`), so
its words are gibberish: the fact checker rejects them and the patient falls back to the rule-based
reply, and the judge's verdicts do not parse. Scripted stand-in backends pin the exact behaviour.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import agentrl  # noqa: F401  (registers the envs)
from agentrl.agents.doctor import DoctorAgent
from agentrl.envs.consult.llm_patient import LLMPatient
from agentrl.envs.consult.persona import lay_words, speak
from agentrl.envs.consult.rubric import JUDGE_PROMPT_VERSION, ConsultRecord, LLMJudge, build_rubric
from agentrl.envs.consult.simulator import RuleBasedPatient
from agentrl.envs.consult.tasks import Case, build_case_bank
from agentrl.llm.base import BackendError, Generation, GenerationConfig
from agentrl.llm.openai_compatible import OpenAICompatibleBackend
from agentrl.llm.server import ModelServer, serve_model
from agentrl.llm.tiny import build_tiny_model
from agentrl.llm.transformers_backend import TransformersBackend

pytestmark = pytest.mark.timeout(120)

QUESTION = "Have you been coughing?"
LEAKY = "I cough a lot and I have green phlegm and a fever."


# -- stand-in backends (test doubles) ----------------------------------------------------------
class Scripted:
    """A test double: replies from a script (the last one repeats) and records what it was sent."""

    name = "scripted"

    def __init__(self, replies: Sequence[str]) -> None:
        self.replies = list(replies)
        self.calls: list[list[dict]] = []

    def generate(self, messages: Sequence[dict], config: GenerationConfig) -> Generation:
        self.calls.append([dict(m) for m in messages])
        return Generation(self.replies[min(len(self.calls) - 1, len(self.replies) - 1)])

    def count_tokens(self, messages: Sequence[dict]) -> int:
        return sum(len(m["content"]) // 4 for m in messages)


class Broken:
    """A test double whose every call fails as a server that is down would."""

    name = "broken"

    def __init__(self) -> None:
        self.calls = 0

    def generate(self, messages: Sequence[dict], config: GenerationConfig) -> Generation:
        self.calls += 1
        raise BackendError("http://127.0.0.1:9/v1/chat/completions: connection refused")


class DiagnosisJudge:
    """A test double for the judge: meets every criterion that mentions the diagnosis, and no other."""

    name = "scripted-judge"

    def __init__(self) -> None:
        self.calls = 0

    def generate(self, messages: Sequence[dict], config: GenerationConfig) -> Generation:
        self.calls += 1
        user = [m for m in messages if m["role"] == "user"][-1]["content"]
        criterion = user.rsplit("Criterion", 1)[1]
        met = "diagnosis" in criterion.lower()
        return Generation(json.dumps({"explanation": "ok", "criteria_met": met}))


# -- the local OpenAI-compatible server --------------------------------------------------------
@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModelServer]:
    """The tiny random model behind an OpenAI-compatible server on loopback."""
    path = build_tiny_model(tmp_path_factory.mktemp("consult-models") / "tiny")
    with TransformersBackend(path, name="tiny-consult") as backend, serve_model(backend) as handle:
        yield handle


@pytest.fixture
def client(server: ModelServer) -> Iterator[OpenAICompatibleBackend]:
    """Our OpenAI-compatible client to it (no retries: a failure shows at once)."""
    with OpenAICompatibleBackend(server.base_url, server.model, max_retries=0) as c:
        yield c


@pytest.fixture(scope="module")
def pneumonia() -> Case:
    """A community-acquired pneumonia case (its opening complaint names cough and fever)."""
    return build_case_bank(1, conditions=["community_acquired_pneumonia"])[0]


def _names_in(text: str, names: Sequence[str]) -> list[str]:
    """The diagnosis names ``text`` mentions (short abbreviations such as "RA" only in capitals)."""
    found = []
    for name in names:
        flags = re.IGNORECASE if len(name) > 3 else 0
        if re.search(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", text, flags):
            found.append(name)
    return found


def _play_oracle(env: gym.Env) -> tuple[list[str], float, bool, dict]:
    """Play the task's oracle turns; the observations, the last reward, terminated, the last info."""
    observations: list[str] = []
    reward, terminated, info = 0.0, False, {}
    for turn in env.unwrapped.task.oracle_actions:
        observation, reward, terminated, truncated, info = env.step(turn)
        observations.append(observation)
        if terminated or truncated:
            break
    return observations, float(reward), terminated, info


# -- the LLM-backed patient --------------------------------------------------------------------
def test_llm_patient_end_to_end_through_the_server(client: OpenAICompatibleBackend) -> None:
    """Against the served tiny model the oracle still earns 1.0: gibberish is rejected and falls back."""
    env = gym.make("AgentRL/PatientConsult-v1", simulator="llm", simulator_backend=client, semantic=False)
    try:
        env.reset(seed=0)
        base = env.unwrapped
        assert isinstance(base.simulator, LLMPatient)
        assert base.simulator.model == client.model
        case = base.case
        spoken = [not turn.lstrip().upper().startswith("REQUEST TEST") for turn in base.task.oracle_actions]
        observations, reward, terminated, info = _play_oracle(env)
        assert terminated and info["done_reason"] == "answered"
        assert reward == 1.0
        stats = base.simulator.stats
        assert stats["attempts"] > 0 and stats["fallbacks"] > 0
        assert client.stats["requests"] == stats["attempts"]
        # the last oracle turn concludes; every spoken turn before it gets the patient's words
        for observation, was_spoken in zip(observations[:-1], spoken[:-1], strict=True):
            if was_spoken:
                assert observation.startswith("Patient:"), observation
                assert not _names_in(observation, case.names), observation
        for role, text in base.transcript:
            if role == "env" and text.startswith("Patient:"):
                assert not _names_in(text, case.names), text
    finally:
        env.close()


def test_llm_patient_regenerates_a_leaky_reply(pneumonia: Case) -> None:
    """A reply that states an unasked fact (phlegm) is rejected; the next, honest one is used."""
    honest = pneumonia.facts["cough"].text
    backend = Scripted([LEAKY, honest])
    patient = LLMPatient(backend, rules=RuleBasedPatient(semantic=False))
    patient.reset(pneumonia.patient_view(), np.random.default_rng(0))
    reply = patient.respond(QUESTION)
    assert reply.text == honest
    assert reply.attempts == 2 and len(backend.calls) == 2
    assert reply.fallback is False
    assert len(reply.notes) == 1 and "leaked" in reply.notes[0] and "sputum" in reply.notes[0]
    assert reply.answered == ("cough",) and reply.disclosed == ("cough",)
    assert patient.stats["rejected_leak"] == 1
    assert patient.stats["attempts"] == 2 and patient.stats["fallbacks"] == 0
    # the LLM saw the question, and its accepted reply joins the conversation it sees next
    assert backend.calls[0][-1] == {"role": "user", "content": QUESTION}
    patient.respond("Are you bringing up any phlegm?")
    assert backend.calls[2][-2:] == [
        {"role": "assistant", "content": honest},
        {"role": "user", "content": "Are you bringing up any phlegm?"},
    ]


def test_llm_patient_falls_back_after_max_attempts(pneumonia: Case) -> None:
    """A backend that always leaks: after max_attempts the rule-based reply is said, marked fallback."""
    backend = Scripted([LEAKY])
    patient = LLMPatient(backend, rules=RuleBasedPatient(semantic=False), max_attempts=3)
    view = pneumonia.patient_view()
    patient.reset(view, np.random.default_rng(0))
    reply = patient.respond(QUESTION)
    assert reply.fallback is True
    assert reply.attempts == patient.max_attempts == 3 == len(backend.calls)
    assert all("leaked" in note for note in reply.notes) and len(reply.notes) == 3
    assert patient.stats["rejected_leak"] == 3 and patient.stats["fallbacks"] == 1
    assert lay_words(pneumonia.facts["cough"].text) in reply.text
    assert reply.disclosed == ("cough",)
    # exactly the rule-based words: the rules seeded as LLMPatient.reset seeds them, spoken with its rng
    rng = np.random.default_rng(0)
    rules = RuleBasedPatient(semantic=False)
    rules.reset(view, np.random.default_rng(int(rng.integers(2**63 - 1))))
    sentences, _ = rules.plan_reply(QUESTION)
    assert reply.text == speak(view.persona, sentences, rng)


def test_llm_patient_survives_backend_errors(pneumonia: Case) -> None:
    """A backend that raises BackendError does not crash the consultation: the rules answer."""
    backend = Broken()
    patient = LLMPatient(backend, rules=RuleBasedPatient(semantic=False), max_attempts=2)
    patient.reset(pneumonia.patient_view(), np.random.default_rng(0))
    reply = patient.respond(QUESTION)
    assert reply.fallback is True and reply.attempts == 2 and backend.calls == 2
    assert all("backend error" in note and "connection refused" in note for note in reply.notes)
    assert lay_words(pneumonia.facts["cough"].text) in reply.text
    assert not reply.left


# -- the LLM judge -----------------------------------------------------------------------------
def _rubric_and_record() -> tuple[tuple, ConsultRecord]:
    rubric = build_rubric(
        diagnosis="migraine",
        key_questions=("onset",),
        red_flags=("neck_stiffness",),
        key_tests=("neuro_exam",),
        plan=(("triptan",),),
        harmful=(("opioid",),),
        tests={"neuro_exam": "normal"},
    )
    record = ConsultRecord(
        asked=frozenset({"onset"}),
        tests=("neuro_exam",),
        doctor_turns=("When did it start?",),
        final_message="It is a headache that comes and goes.\nDIAGNOSIS: migraine\nPLAN: triptan",
        transcript=(
            ("env", "Patient: I have a headache."),
            ("agent", "When did it start?"),
            ("env", "Patient: Monday."),
        ),
    )
    return rubric, record


def test_llm_judge_scores_caches_and_records(tmp_path: Path) -> None:
    """The judge's verdicts give HealthBench's score, are cached to JSONL, and the detail names model and prompt."""
    rubric, record = _rubric_and_record()
    cache = tmp_path / "v.jsonl"
    backend = DiagnosisJudge()
    judge = LLMJudge(backend, cache_path=cache)
    score = judge.grade(rubric, record, names=("migraine",), differential=())
    # by hand: only criteria whose text mentions "diagnosis" are met
    met = ["diagnosis" in c.text.lower() for c in rubric]
    assert any(met) and not all(met)
    positive = sum(c.points for c in rubric if c.points > 0)
    expected = min(max(sum(c.points for c, m in zip(rubric, met, strict=True) if m) / positive, 0.0), 1.0)
    assert score.value == pytest.approx(expected)
    assert score.value == pytest.approx(10 / positive)
    assert score.breakdown["criterion/diagnosis"] == 10
    detail = json.loads(score.detail)
    assert detail["grader"] == "llm"
    assert detail["model"] == "scripted-judge"
    assert detail["prompt_version"] == JUDGE_PROMPT_VERSION
    assert detail["unparsed"] == 0
    assert judge.calls == backend.calls == len(rubric)
    rows = [json.loads(line) for line in cache.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == len(rubric) and all(set(row) == {"key", "verdict"} for row in rows)

    # the same judge asks nothing twice
    assert judge.grade(rubric, record, names=("migraine",), differential=()).value == score.value
    assert backend.calls == len(rubric)

    # a fresh judge over the same cache file makes no call at all
    again_backend = DiagnosisJudge()
    again = LLMJudge(again_backend, cache_path=cache)
    assert again.grade(rubric, record, names=("migraine",), differential=()).value == score.value
    assert again.calls == 0 and again_backend.calls == 0

    # a different conversation is a different key
    other = ConsultRecord(record.asked, record.tests, record.doctor_turns, record.final_message, record.transcript[:1])
    again.grade(rubric, other, names=("migraine",), differential=())
    assert again.calls == len(rubric)


def test_llm_judge_unparsable_reply_is_not_met(tmp_path: Path) -> None:
    """A verdict that is not the JSON asked for counts as not met and is counted as unparsed."""
    rubric, record = _rubric_and_record()
    judge = LLMJudge(Scripted(["yes"]), cache_path=tmp_path / "v.jsonl")
    score = judge.grade(rubric, record, names=("migraine",), differential=())
    assert score.value == 0.0
    assert all(points == 0 for points in score.breakdown.values())
    detail = json.loads(score.detail)
    assert detail["unparsed"] == len(rubric)
    assert detail["model"] == "scripted"


def test_env_llm_judge_through_the_server(server: ModelServer, client: OpenAICompatibleBackend, tmp_path: Path) -> None:
    """grader="llm" against the served tiny model: unparsable verdicts, recorded; the cache replays for free."""
    cache = tmp_path / "verdicts.jsonl"

    def play() -> tuple[gym.Env, float, bool, dict]:
        env = gym.make(
            "AgentRL/PatientConsult-v1", semantic=False, grader="llm", judge_backend=client, judge_cache=cache
        )
        env.reset(seed=0)
        _, reward, terminated, info = _play_oracle(env)
        return env, reward, terminated, info

    env, reward, terminated, info = play()
    try:
        assert terminated and info["done_reason"] == "answered"
        assert isinstance(reward, float) and 0.0 <= reward <= 1.0
        grading = info["grading"]
        assert grading["grader"] == "llm"
        assert grading["model"] == server.model
        assert grading["prompt_version"] == JUDGE_PROMPT_VERSION
        assert grading["unparsed"] >= 1
        judge = env.unwrapped.grader
        assert isinstance(judge, LLMJudge) and judge.calls == len(env.unwrapped.case.rubric)
        assert cache.is_file()
    finally:
        env.close()

    requests = client.stats["requests"]
    replay, replay_reward, replay_terminated, replay_info = play()
    try:
        assert replay_terminated and replay_reward == reward
        assert replay_info["grading"] == grading
        assert replay.unwrapped.grader.calls == 0
        assert client.stats["requests"] == requests
    finally:
        replay.close()


# -- the doctor agent --------------------------------------------------------------------------
def test_doctor_agent_runs_an_episode_through_the_server(client: OpenAICompatibleBackend) -> None:
    """The DoctorAgent with the served tiny model runs a whole (short) consultation without error."""
    env = gym.make("AgentRL/PatientConsult-v1", semantic=False, max_turns=4)
    agent = DoctorAgent(client, max_tokens=24, seed=0)
    try:
        agent.bind(env)
        observation, info = env.reset(seed=0)
        agent.reset(info)
        turns = 0
        terminated = truncated = False
        while not (terminated or truncated):
            action = agent.act(observation, info)
            assert isinstance(action, str)
            observation, reward, terminated, truncated, info = env.step(action)
            turns += 1
            assert turns <= 4
        assert isinstance(reward, float) and 0.0 <= reward <= 1.0
        assert len(agent.generations) == turns
        notes = [m["content"] for m in agent.messages if m["role"] == "user" and "[note]" in m["content"]]
        assert notes, "the agent should ask for a conclusion on the last turns"
        assert "DIAGNOSIS" in notes[-1]
    finally:
        env.close()
