"""Asks VLC's HTTP interface for ``/requests/status.xml`` and prints the answer, base64-encoded.

Runs where: in the desktop's sandbox, whose loopback VLC listens on, started by
:func:`~agentrl.envs.osworld.evaluators.vlc.vlc_playing_info` through the desktop's ``execute``: ``python3 -c
<this file's text> <port> <password>`` (VLC's ``--http-port`` and ``--http-password``). Standard library only; no
proxy. Exits with a message when VLC does not answer.

Why a separate file: it is a whole program, so ruff, mypy and the import graph read it as one; importing it runs
nothing.
"""

from __future__ import annotations

import base64
import sys
import urllib.request


def main(argv: list[str]) -> None:
    """``argv``: ``[-c, <port>, <password>]``; writes the base64 of VLC's ``status.xml`` on standard output."""
    port, password = argv[1], argv[2]
    auth = base64.b64encode(b":" + password.encode()).decode()
    request = urllib.request.Request(f"http://localhost:{port}/requests/status.xml",
                                     headers={"Authorization": "Basic " + auth})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=10) as answer:
            data = answer.read()
    except Exception as error:
        sys.exit(f"VLC's HTTP interface did not answer: {error}")
    sys.stdout.write(base64.b64encode(data).decode())


if __name__ == "__main__":
    main(sys.argv)
