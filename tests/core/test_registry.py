"""One registration path (``register_domain``) for every id, and ``agentrl list`` shows them all."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings

import gymnasium as gym
import pytest

import agentrl
from agentrl.bench.suites import SUITES
from agentrl.core.errors import RegistrationError, UnknownEnvId
from agentrl.core.registry import describe, env_id, registered_envs

# In a fresh interpreter (no ids that tests register for themselves): what `agentrl list` prints, and
# every AgentRL* id in Gymnasium's registry after it ran.
_LIST_AND_REGISTRY = r"""
import contextlib, io, json
import gymnasium as gym
from agentrl.cli import main

out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(["list"])
ids = sorted(env_id for env_id in gym.registry if env_id.startswith("AgentRL"))
print(json.dumps({"code": code, "out": out.getvalue(), "ids": ids}))
"""


def test_agentrl_list_prints_every_agentrl_id_in_the_gymnasium_registry() -> None:
    result = subprocess.run([sys.executable, "-c", _LIST_AND_REGISTRY], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["code"] == 0
    printed = re.findall(r"^  (AgentRL[\w-]*/\S+)", report["out"], flags=re.MULTILINE)
    assert len(printed) == len(set(printed))
    assert set(printed) == set(report["ids"])
    # the toy envs and the seat views are listed too, each under its group
    assert {"AgentRL/Letter-v0", "AgentRL/ColourLetter-v0", "AgentRL-MA/tictactoe-vs-best-v1"} <= set(printed)
    assert re.search(r"^toy .*\n  AgentRL/ColourLetter-v0", report["out"], flags=re.MULTILINE)
    assert "\nmultiagent " in report["out"] and "\nTIRMath\n" in report["out"]


def test_every_registered_id_went_through_register_domain() -> None:
    ids = {spec.env_id for spec in registered_envs()}
    builtin = {i for i in gym.registry if i.startswith(("AgentRL/", "AgentRL-MA/")) and i in ids}
    assert len(builtin) == len(ids) >= 47
    assert all(gym.spec(i).entry_point == describe(i).entry_point for i in ids)


def test_benchmark_domains_leave_out_the_toys_the_seats_and_deprecated_versions() -> None:
    domains = {spec.env_id for spec in agentrl.registered_domains()}
    assert {"AgentRL/TIRMath-v0", "AgentRL/OSWorld-v0", "AgentRL/FlashGame-Catch-v0"} <= domains
    extras = {spec.env_id for spec in registered_envs() if not spec.benchmark}
    assert not domains & extras
    assert {"AgentRL/Letter-v0", "AgentRL/ColourLetter-v0", "AgentRL-MA/nim-vs-best-v1"} <= extras
    for name, (_, ids) in SUITES.items():
        assert not set(ids()) & extras, name
    toy = describe("AgentRL/Letter-v0")
    assert toy.group == "toy" and "toy" in toy.tags and not toy.benchmark


def test_deprecated_v0_seats_stay_registered_with_gymnasiums_warning() -> None:
    old = describe("AgentRL-MA/tictactoe-vs-random-v0")
    assert old.deprecated and "v1" in old.deprecated and not old.benchmark
    assert describe("AgentRL-MA/tictactoe-vs-random-v1").deprecated is None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = gym.make("AgentRL-MA/tictactoe-vs-random-v0")
    env.close()
    assert any("out of date" in str(w.message) for w in caught)


def test_namespaces_and_errors() -> None:
    assert env_id("nim", 1, variant="vs-best", namespace="AgentRL-MA") == "AgentRL-MA/nim-vs-best-v1"
    with pytest.raises(RegistrationError, match="CamelCase"):
        env_id("nim")  # the AgentRL namespace keeps CamelCase names
    with pytest.raises(RegistrationError, match="namespace"):
        env_id("Nim", namespace="Other")
    with pytest.raises(gym.error.UnregisteredEnv):
        describe("AgentRL/Leter-v0")
    with pytest.raises(UnknownEnvId, match="did you mean AgentRL/Letter-v0"):
        describe("AgentRL/Leter-v0")
