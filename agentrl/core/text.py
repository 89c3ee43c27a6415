"""Small text helpers shared by envs."""

from __future__ import annotations

__all__ = ["truncate_middle"]


def truncate_middle(text: str, limit: int) -> str:
    """Cut ``text`` to at most ``limit`` characters, keeping its head and tail, with a visible marker.

    The tail is kept because tracebacks and logs end with what matters.

    >>> truncate_middle("0123456789" * 10, 50)
    '01234567890123... [72 chars cut] ...67890123456789'
    >>> truncate_middle("short", 50)
    'short'
    """
    if len(text) <= limit:
        return text
    for keep in range(limit, -1, -1):
        marker = f"... [{len(text) - keep} chars cut] ..."
        if keep + len(marker) <= limit:
            head = (keep + 1) // 2
            return text[:head] + marker + text[len(text) - (keep - head) :]
    return text[:limit]  # a limit shorter than any marker: a plain cut
