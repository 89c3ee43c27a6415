"""Small text helpers shared by envs and sandboxes."""

from __future__ import annotations

__all__ = ["truncate_middle", "truncate_tail"]


def truncate_tail(text: str, limit: int) -> str:
    """Cut ``text`` to at most ``limit`` characters, ending with a visible marker when cut.

    >>> truncate_tail("abcdefghij" * 10, 40)
    'abcdefghij... [truncated: 90 more chars]'
    >>> truncate_tail("short", 40)
    'short'
    """
    if len(text) <= limit:
        return text
    for keep in range(limit, -1, -1):
        marker = f"... [truncated: {len(text) - keep} more chars]"
        if keep + len(marker) <= limit:
            return text[:keep] + marker
    return text[:limit]


def truncate_middle(text: str, limit: int) -> str:
    """Keep the head and the tail of ``text`` (tracebacks and logs end with what matters).

    >>> truncate_middle("0123456789" * 10, 50)
    '01234567890123... [72 chars cut] ...67890123456789'
    """
    if len(text) <= limit:
        return text
    for keep in range(limit, -1, -1):
        marker = f"... [{len(text) - keep} chars cut] ..."
        if keep + len(marker) <= limit:
            head = (keep + 1) // 2
            return text[:head] + marker + text[len(text) - (keep - head) :]
    return text[:limit]
