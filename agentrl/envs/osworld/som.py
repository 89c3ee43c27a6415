r"""Set-of-marks, as OSWorld's ``som`` observation does it: numbered boxes on the screenshot, and their list.

:func:`agentrl.envs.osworld.a11y.marks` gives the boxes (from the accessibility tree);
:func:`draw_marks` draws them (a red outline, the index white on black at the box's bottom-left) and
:func:`marks_table` writes the ``index\ttag\tname\ttext`` list the agent reads beside the image.
:func:`set_of_marks` does all three from a screenshot and the tree's XML.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["draw_marks", "marks_table", "set_of_marks"]


def _quoted(text: str) -> str:
    if not text:
        return '""'
    return '"' + text.replace('"', '""') + '"' if '"' in text else text


def marks_table(marks: Sequence[Mapping[str, Any]]) -> str:
    r"""The list OSWorld's set-of-marks agent gets: ``index\ttag\tname\ttext``, one line a mark.

    Text with a ``"`` is quoted CSV-style; empty text is ``""``.

    >>> print(marks_table([{"index": 1, "tag": "menu", "name": "File", "text": ""}]).replace("\t", " | "))
    index | tag | name | text
    1 | menu | File | ""
    """
    lines = ["index\ttag\tname\ttext"]
    for m in marks:
        lines.append(f"{int(m['index'])}\t{m.get('tag', '')}\t{m.get('name', '')}\t{_quoted(str(m.get('text') or ''))}")
    return "\n".join(lines)


def draw_marks(image: np.ndarray, marks: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """A copy of the ``(H, W, 3)`` uint8 ``image`` with each mark's box and index drawn on it.

    >>> img = np.full((60, 80, 3), 255, dtype=np.uint8)
    >>> out = draw_marks(img, [{"index": 1, "x": 10, "y": 10, "w": 30, "h": 20}])
    >>> out.shape, out[10, 20].tolist(), img[10, 20].tolist()
    ((60, 80, 3), [255, 0, 0], [255, 255, 255])
    """
    from PIL import Image, ImageDraw, ImageFont

    arr = np.asarray(image)
    if arr.ndim != 3 or arr.shape[2] not in (3, 4):
        raise ValueError(f"image must be (H, W, 3) or (H, W, 4), got {arr.shape}")
    pil = Image.fromarray(np.ascontiguousarray(arr[:, :, :3]).astype(np.uint8))
    draw = ImageDraw.Draw(pil)
    try:
        font: Any = ImageFont.load_default(size=15)
    except TypeError:  # Pillow < 10.1 has no sized default font
        font = ImageFont.load_default()
    for m in marks:
        x, y, w, h = (int(m[k]) for k in ("x", "y", "w", "h"))
        if w <= 0 or h <= 0:
            continue
        draw.rectangle([(x, y), (x + w, y + h)], outline=(255, 0, 0), width=1)
        label = str(int(m["index"]))
        pos = (x, y + h)
        bbox = draw.textbbox(pos, label, font=font, anchor="lb")
        draw.rectangle(bbox, fill=(0, 0, 0))
        draw.text(pos, label, font=font, anchor="lb", fill=(255, 255, 255))
    return np.asarray(pil, dtype=np.uint8).copy()


def set_of_marks(image: np.ndarray, xml: str) -> tuple[list[dict[str, Any]], np.ndarray, str]:
    """``(marks, image with marks drawn, marks_table)`` from a screenshot and the accessibility tree's XML.

    Boxes over a single colour are left out, as OSWorld's ``draw_bounding_boxes`` does.
    """
    from agentrl.envs.osworld.a11y import marks as find_marks

    found = find_marks(xml, image)
    return found, draw_marks(image, found), marks_table(found)
