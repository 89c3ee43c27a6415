#!/bin/sh
# AgentRL: the desktop server's Python, with its site-packages (pyautogui) importable.
exec "$(dirname "$0")/venv/bin/python3" "$@"
