"""The desktop's runtime: what runs one real desktop and everything it starts, below the HTTP server.

:mod:`.desktop` (Xvfb, the window manager, a private HOME: :class:`~.desktop.DesktopSession`), :mod:`.jail`
(the one sandbox every command, app and action of a desktop runs in), :mod:`.executor` (the persistent pyautogui
worker), :mod:`.container` (a desktop per Docker container), :mod:`.recording` (ffmpeg x11grab), :mod:`.windows`
(xdotool), :mod:`.hotkeys` (``ctrl+alt+t``), :mod:`.wallpaper`, :mod:`.terminal` (the xterm's text),
:mod:`.apps` (which Debian packages stand in for OSWorld's apps), :mod:`.cdp` (the DevTools client that runs
inside the sandbox) and :mod:`.vm_state` (OSWorld's VM image's starting state). Nothing here knows OSWorld's
task format or its evaluators.
"""
