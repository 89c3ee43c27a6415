"""Every registered env id passes agentrl.testing.check_domain: the bar every domain must meet."""

from __future__ import annotations

import pytest

import agentrl
from agentrl.testing import DomainCheckError, check_domain

ENV_IDS = [spec.env_id for spec in agentrl.registered_domains()]


def test_there_is_something_to_check():
    assert "AgentRL/TIRMath-v0" in ENV_IDS


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_domain(env_id):
    check_domain(env_id, seeds=(0, 1, 2))


def test_check_domain_catches_a_broken_oracle(monkeypatch):
    from agentrl.envs.tirmath import tasks

    original = tasks.generate_problem

    def wrong_gold(family, difficulty, seed):
        task = original(family, difficulty, seed)
        return type(task)(**{**task.__dict__, "answer": task.answer + "1"})

    monkeypatch.setattr(tasks, "generate_problem", wrong_gold)
    with pytest.raises(DomainCheckError, match="oracle did not solve"):
        check_domain("AgentRL/TIRMath-v0", seeds=(0,))
