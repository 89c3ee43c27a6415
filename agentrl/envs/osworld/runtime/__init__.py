"""The desktop's runtime: what runs one real desktop and everything it starts, below the HTTP server.

:mod:`.desktop` (a desktop's use: apps, commands, files, the screen, actions, reset: :class:`~.desktop.DesktopSession`),
:mod:`.startup` (its start: Xvfb and the window manager), :mod:`.episode` (each episode's start: HOME restored, a new
sandbox, its daemons), :mod:`.jail` (the one sandbox every command, app and action of a desktop runs in),
:mod:`.executor` (the persistent pyautogui worker), :mod:`.container` (a desktop per Docker container),
:mod:`.recording` (ffmpeg x11grab), :mod:`.windows` (xdotool), :mod:`.hotkeys` (``ctrl+alt+t``), :mod:`.wallpaper`,
:mod:`.terminal` (the xterm's text), :mod:`.apps` (which Debian packages stand in for OSWorld's apps), :mod:`.cdp`
(the DevTools client that runs inside the sandbox) and :mod:`.vm_state` (OSWorld's VM image's starting state).
:mod:`.programs` holds the programs that run in the sandbox or the worker (the jail's supervisor, the pyautogui
worker, the ``ctrl+alt+t`` daemon...), each a module of its own; ``jail_files/`` the sandbox's ``sudo``, its
``apt.conf`` and the ``python`` launcher (package data). Nothing here knows OSWorld's task format or its evaluators.
"""
