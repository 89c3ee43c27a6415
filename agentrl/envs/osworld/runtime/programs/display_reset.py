"""What the pyautogui worker runs to leave the display clean: keys and buttons released, leftover X clients killed.

Runs where: in the desktop's pyautogui worker (:mod:`.pyautogui_worker`, in the sandbox), as a snippet: the
desktop sends this file's text followed by a call (:func:`~agentrl.envs.osworld.runtime.startup.release_input_code`,
:func:`~agentrl.envs.osworld.runtime.startup.reset_display_code`), which the worker runs as it runs an action.
It uses the worker's own X connection (pyautogui's), so it is the worker's interpreter and import path (pyautogui,
python-xlib); ``agentrl`` is not imported. Defining the functions does nothing: only the call acts.

* :func:`release_input`: after an action killed at its deadline, and at each reset: a key or button it held down
  would type into what comes next.
* :func:`clean_display`: at reset, once every process of the last episode is gone. A client that set its
  close-down mode to ``RetainPermanent`` keeps its windows on the screen after it exits. Every window whose
  client is neither the window manager (its check window, read when it started) nor this worker is such a
  leftover, and ``KillClient`` on it destroys all its client made. The root gets its wallpaper back.

Why a separate file: it is Python that runs in another process, so ruff, mypy and the import graph read it as a
module.
"""

from __future__ import annotations


def release_input() -> None:
    """Release every key and mouse button the X server holds down (XTEST), on the worker's display."""
    import pyautogui._pyautogui_x11 as x11
    from Xlib import X
    from Xlib.ext import xtest

    d = x11._display
    for i, byte in enumerate(d.query_keymap()):
        for bit in range(8):
            if byte & (1 << bit):
                xtest.fake_input(d, X.KeyRelease, i * 8 + bit)
    mask = d.screen().root.query_pointer().mask
    for button, flag in ((1, X.Button1Mask), (2, X.Button2Mask), (3, X.Button3Mask)):
        if mask & flag:
            xtest.fake_input(d, X.ButtonRelease, button)
    d.sync()


def clean_display(wm_window: int, root_pixmap: int) -> None:
    """Kill the X clients of the windows left behind; set the root's background to ``root_pixmap`` (0: leave it).

    ``wm_window``: the window manager's check window (0: none), whose client's windows stay.
    """
    import pyautogui._pyautogui_x11 as x11
    from Xlib import error

    d = x11._display
    mask = d.display.info.resource_id_mask
    keep = {d.display.info.resource_id_base} | ({wm_window & ~mask} if wm_window else set())
    root = d.screen().root
    todo, left = [(root, 0)], []
    while todo:
        window, depth = todo.pop()
        try:
            children = window.query_tree().children
        except error.XError:
            continue
        for child in children:
            if child.id & ~mask not in keep:
                left.append(child.id)
            elif depth < 3:  # the window manager's frames hold the windows it manages
                todo.append((child, depth + 1))
    for ident in left:
        d.create_resource_object("window", ident).kill_client(onerror=error.CatchError())
    if root_pixmap:
        root.change_attributes(background_pixmap=root_pixmap, onerror=error.CatchError())
        root.clear_area(0, 0, 0, 0, onerror=error.CatchError())
    d.sync()
