"""OSWorld's Impress (``.pptx``) and LibreOffice-settings metrics, with OSWorld's semantics (``metrics/slides.py``).

The central one is :func:`compare_pptx_files`, which walks two presentations slide by slide and shape
by shape and returns 0 at the first difference its ``examine_*`` options look at. A missing or
unreadable file scores 0. Presentations are read with python-pptx
(``pip install 'agentrl-gym[osworld-office]'``); LibreOffice's ``registrymodifications.xcu`` and
slide XML are read with the standard library.

:data:`PPTX_METRICS` maps OSWorld's metric names to the functions here.
"""

from __future__ import annotations

import math
import zipfile
from collections.abc import Callable, Mapping
from typing import Any
from xml.etree import ElementTree

from agentrl.core.errors import DependencyNotInstalled
from agentrl.envs.osworld.metrics_docx import _registry_value

__all__ = [
    "EXAMINE_DEFAULTS",
    "PPTX_METRICS",
    "check_auto_saving_time",
    "check_image_stretch_and_center",
    "check_page_number_colors",
    "check_presenter_console_disable",
    "check_slide_orientation_Portrait",
    "check_strikethrough",
    "check_transition",
    "compare_pptx_files",
    "evaluate_presentation_fill_to_rgb_distance",
    "open_pptx",
]

INSTALL = "pip install 'agentrl-gym[osworld-office]'  (or: pip install python-pptx)"
A_NS = "http://schemas.openxmlformats.org/drawingml/2006/main"
P_NS = "http://schemas.openxmlformats.org/presentationml/2006/main"
PICTURE, TABLE, FREEFORM = 13, 19, 5
"""python-pptx ``MSO_SHAPE_TYPE`` values OSWorld compares against."""
EMU_PER_INCH = 914400

EXAMINE_DEFAULTS: dict[str, bool] = {
    "examine_number_of_slides": True,
    "examine_shape": True,
    "examine_text": True,
    "examine_indent": True,
    "examine_font_name": True,
    "examine_font_size": True,
    "examine_font_bold": True,
    "examine_font_italic": True,
    "examine_color_rgb": True,
    "examine_font_underline": True,
    "examine_strike_through": True,
    "examine_alignment": True,
    "examine_bullets": True,
    "examine_background_color": True,
    "examine_note": True,
    "examine_title_bottom_position": False,
    "examine_table_bottom_position": False,
    "examine_right_position": False,
    "examine_top_position": False,
    "examine_shape_for_shift_size": False,
    "examine_image_size": False,
    "examine_modify_height": False,
}
""":func:`compare_pptx_files`'s options and OSWorld's defaults. Other keys are ignored, as OSWorld does
(one real task spells ``examine_aligment``)."""


def open_pptx(path: Any) -> Any | None:
    """The python-pptx ``Presentation`` at ``path``, or ``None`` when there is no path or it does not parse.

    Raises:
        DependencyNotInstalled: python-pptx is missing (the message names the install command).
    """
    try:
        import pptx
    except ImportError as error:
        raise DependencyNotInstalled("python-pptx", command=INSTALL) from error
    if not path:
        return None
    try:
        return pptx.Presentation(str(path))
    except Exception:  # a truncated or non-pptx file scores 0
        return None


def _rgb(color: Any) -> Any | None:
    """A color format's explicit RGB, or ``None`` (no color, or a theme color)."""
    try:
        return color.rgb
    except AttributeError:
        return None


def _background_rgb(slide: Any) -> Any | None:
    """The slide's own solid background color, or ``None``.

    OSWorld meant to compare this but its helper calls ``fill.background()`` (a setter), so there it
    always reads ``None``; here a solid fill defined on the slide itself is compared.
    """
    if slide._element.find(f"{{{P_NS}}}cSld/{{{P_NS}}}bg") is None:
        return None
    fill = slide.background.fill
    try:
        return fill.fore_color.rgb if fill.type == 1 else None  # MSO_FILL.SOLID
    except (AttributeError, TypeError):
        return None


def _notes(slide: Any) -> str:
    if not slide.has_notes_slide:
        return ""
    frame = slide.notes_slide.notes_text_frame
    return frame.text if frame is not None else ""


def _bullets(slide: Any) -> list[tuple[Any, ...]]:
    """Every ``a:p`` of the slide: ``(level, bullet char, text, bullet color)``, as OSWorld extracts them."""
    bullets = []
    for paragraph in slide._element.iter(f"{{{A_NS}}}p"):
        ppr = paragraph.find(f"{{{A_NS}}}pPr")
        if ppr is not None:
            level = ppr.get("lvl")
            char_el = ppr.find(f"{{{A_NS}}}buChar")
            char = char_el.get("char") if char_el is not None else "No Bullet"
            color_el = ppr.find(f"{{{A_NS}}}buClr/{{{A_NS}}}srgbClr")
            color = color_el.get("val") if color_el is not None else "No Color"
        else:
            level, char, color = "No Level", "No Bullet", "No Color"
        text = "".join(t.text or "" for t in paragraph.iter(f"{{{A_NS}}}t"))
        bullets.append((level, char, text, color))
    return bullets


def _same_box(shape1: Any, shape2: Any) -> bool:
    box1 = (shape1.left, shape1.top, shape1.width, shape1.height)
    return box1 == (shape2.left, shape2.top, shape2.width, shape2.height)


def _has_text(shape: Any) -> bool:
    return bool(getattr(shape, "has_text_frame", False))


def _positions_ok(shape1: Any, shape2: Any, slide_no: int, ex: Mapping[str, bool]) -> bool:
    """OSWorld's task-specific position options (their thresholds are in EMU, as OSWorld has them)."""
    text1 = shape1.text_frame.text if _has_text(shape1) else None
    text2 = shape2.text_frame.text if _has_text(shape2) else None
    if ex["examine_title_bottom_position"]:
        if text1 is not None and text2 is not None and text1 == text2:
            if text1 == "Product Comparison" and (shape1.top <= shape2.top or shape1.top < 3600000):
                return False
        elif not _same_box(shape1, shape2):
            return False
    if ex["examine_table_bottom_position"]:
        if slide_no == 3 and shape1.shape_type == TABLE and shape2.shape_type == TABLE:
            if shape1.top <= shape2.top or shape1.top < 3600000:
                return False
        elif not _same_box(shape1, shape2):
            return False
    if ex["examine_right_position"] and slide_no == 2 and text1 is None and text2 is None:
        if shape1.left <= shape2.left or shape1.left < 4320000:
            return False
    if ex["examine_top_position"]:
        if slide_no == 2 and shape1.shape_type == PICTURE and shape2.shape_type == PICTURE:
            if shape1.top >= shape2.top or shape1.top > 1980000:
                return False
        elif not _same_box(shape1, shape2):
            return False
    if ex["examine_shape_for_shift_size"] and not _same_box(shape1, shape2):
        if not (text1 is not None and text1 == text2 and text1 == "Elaborate on what you want to discuss."):
            return False
    if ex["examine_shape"] and not _same_box(shape1, shape2):
        return False
    if ex["examine_image_size"]:
        if shape1.shape_type == PICTURE and shape2.shape_type == PICTURE:
            if (shape1.width, shape1.height) != (shape2.width, shape2.height):
                return False
        elif not _same_box(shape1, shape2):
            return False
    if ex["examine_modify_height"]:
        if (text1 is None and text2 is None) or (shape1.shape_type == FREEFORM and shape2.shape_type == FREEFORM):
            if shape1.height != shape2.height:
                return False
        elif not _same_box(shape1, shape2):
            return False
    return True


def _runs_ok(run1: Any, run2: Any, ex: Mapping[str, bool]) -> bool:
    font1, font2 = run1.font, run2.font
    if ex["examine_font_name"] and font1.name != font2.name:
        return False
    if ex["examine_font_size"] and font1.size != font2.size:
        return False
    if ex["examine_font_bold"] and font1.bold != font2.bold:
        return False
    if ex["examine_font_italic"] and font1.italic != font2.italic:
        return False
    rgb1, rgb2 = _rgb(font1.color), _rgb(font2.color)
    if ex["examine_color_rgb"] and rgb1 is not None and rgb2 is not None and rgb1 != rgb2:
        return False
    if ex["examine_font_underline"] and font1.underline != font2.underline:
        return False
    strike1 = font1._element.attrib.get("strike", "noStrike")
    strike2 = font2._element.attrib.get("strike", "noStrike")
    return not (ex["examine_strike_through"] and strike1 != strike2)


def _text_frames_ok(shape1: Any, shape2: Any, ex: Mapping[str, bool]) -> tuple[bool, bool]:
    """``(equal, compared_a_run)`` for two text shapes."""
    compared = False
    if ex["examine_text"] and shape1.text_frame.text.strip() != shape2.text_frame.text.strip():
        return False, compared
    for para1, para2 in zip(shape1.text_frame.paragraphs, shape2.text_frame.paragraphs, strict=False):
        if ex["examine_alignment"] and para1.alignment != para2.alignment:
            return False, compared
        if ex["examine_text"] and para1.text != para2.text:
            return False, compared
        if ex["examine_indent"] and para1.level != para2.level:
            return False, compared
        for run1, run2 in zip(para1.runs, para2.runs, strict=False):
            compared = True
            if not _runs_ok(run1, run2, ex):
                return False, compared
    return True, compared


def _tables_ok(shape1: Any, shape2: Any, ex: Mapping[str, bool]) -> bool:
    """Two table shapes: same rows and columns; with ``examine_text``, the same cell texts."""
    table1, table2 = shape1.table, shape2.table
    if len(table1.rows) != len(table2.rows) or len(table1.columns) != len(table2.columns):
        return False
    if ex["examine_text"]:
        for row1, row2 in zip(table1.rows, table2.rows, strict=True):
            for cell1, cell2 in zip(row1.cells, row2.cells, strict=True):
                if cell1.text.strip() != cell2.text.strip():
                    return False
    return True


def compare_pptx_files(result: Any, expected: Any, **options: Any) -> float:
    """1.0 if two presentations agree on everything the ``examine_*`` options look at, else 0.0.

    As OSWorld: the slide counts (``examine_number_of_slides``); per slide, the background color and
    the notes text; then shapes pairwise in order (extra shapes on one side are not looked at): their
    box (``examine_shape``: left, top, width, height, exactly, in EMU) and OSWorld's task-specific
    position options; for text shapes the whole text (``examine_text``, stripped), then paragraph by
    paragraph alignment, text, level (``examine_indent``) and run by run the font name, size, bold,
    italic, RGB color (when both runs set one), underline and strike-through. ``examine_bullets``
    compares the slide's bullet list (level, char, text, color of every paragraph) once a run pair
    has been compared on it. Added here: table shapes must have the same size and, with
    ``examine_text``, the same cell texts. See :data:`EXAMINE_DEFAULTS` for the options.

    A missing file scores 0:

    >>> compare_pptx_files("missing.pptx", "expected.pptx")
    0.0
    """
    prs1, prs2 = open_pptx(result), open_pptx(expected)
    if prs1 is None or prs2 is None:
        return 0.0
    ex = {name: bool(options.get(name, default)) for name, default in EXAMINE_DEFAULTS.items()}
    if ex["examine_number_of_slides"] and len(prs1.slides) != len(prs2.slides):
        return 0.0
    for slide_no, (slide1, slide2) in enumerate(zip(prs1.slides, prs2.slides, strict=False), start=1):
        if ex["examine_background_color"] and _background_rgb(slide1) != _background_rgb(slide2):
            return 0.0
        if ex["examine_note"] and _notes(slide1).strip() != _notes(slide2).strip():
            return 0.0
        runs_compared = False
        for shape1, shape2 in zip(slide1.shapes, slide2.shapes, strict=False):
            if not _positions_ok(shape1, shape2, slide_no, ex):
                return 0.0
            if shape1.shape_type == TABLE and shape2.shape_type == TABLE and not _tables_ok(shape1, shape2, ex):
                return 0.0
            if _has_text(shape1) and _has_text(shape2):
                equal, compared = _text_frames_ok(shape1, shape2, ex)
                runs_compared = runs_compared or compared
                if not equal:
                    return 0.0
        if ex["examine_bullets"] and runs_compared and _bullets(slide1) != _bullets(slide2):
            return 0.0
    return 1.0


def check_image_stretch_and_center(result: Any, expected: Any, **options: Any) -> float:
    """Whether ``expected``'s first picture fills ``result``'s first slide, centered.

    The first picture of ``expected``'s first slide must appear on ``result``'s first slide stretched
    to the slide size and centered, each within half an inch.

    A missing file scores 0:

    >>> check_image_stretch_and_center("missing.pptx", "expected.pptx")
    0.0
    """
    modified, original = open_pptx(result), open_pptx(expected)
    if modified is None or original is None or not len(original.slides) or not len(modified.slides):
        return 0.0
    originals = [s for s in original.slides[0].shapes if s.shape_type == PICTURE]
    if not originals:
        return 0.0
    blob = originals[0].image.blob
    matches = [s for s in modified.slides[0].shapes if s.shape_type == PICTURE and s.image.blob == blob]
    if not matches:
        return 0.0
    image = matches[-1]
    width, height = original.slide_width, original.slide_height
    tolerance = EMU_PER_INCH / 2
    return float(abs(image.width - width) <= tolerance and abs(image.height - height) <= tolerance
                 and abs(image.left - (width - image.width) / 2) <= tolerance
                 and abs(image.top - (height - image.height) / 2) <= tolerance)


def check_slide_orientation_Portrait(result: Any, expected: Any = None, **options: Any) -> float:
    """Whether the slides are taller than wide.

    A missing file scores 0:

    >>> check_slide_orientation_Portrait("missing.pptx")
    0.0
    """
    prs = open_pptx(result)
    return float(prs is not None and prs.slide_width < prs.slide_height)


def check_strikethrough(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    """Whether the first run of each chosen paragraph is struck through.

    ``rules``: ``slide_index_s``, ``shape_index_s``, ``paragraph_index_s`` (lists of indices).

    A missing file scores 0:

    >>> check_strikethrough("missing.pptx", {"slide_index_s": [0], "shape_index_s": [0], "paragraph_index_s": [0]})
    0.0
    """
    prs = open_pptx(result)
    if prs is None:
        return 0.0
    try:
        for slide_index in rules["slide_index_s"]:
            slide = prs.slides[slide_index]
            for shape_index in rules["shape_index_s"]:
                paragraphs = slide.shapes[shape_index].text_frame.paragraphs
                for paragraph_index in rules["paragraph_index_s"]:
                    if "strike" not in paragraphs[paragraph_index].runs[0].font._element.attrib:
                        return 0.0
    except (IndexError, AttributeError):
        return 0.0
    return 1.0


def evaluate_presentation_fill_to_rgb_distance(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    """``1 - mean distance`` of every slide's background to ``rules["rgb"]`` (Euclidean, over the RGB cube's diagonal).

    A solid slide fill counts; a slide that inherits its background uses the master's solid fill;
    anything else is at distance 1.

    A missing file scores 0:

    >>> evaluate_presentation_fill_to_rgb_distance("missing.pptx", {"rgb": [0, 0, 255]})
    0.0
    """
    prs = open_pptx(result)
    if prs is None or not len(prs.slides):
        return 0.0
    target = rules["rgb"]

    def distance(slide: Any) -> float:
        fill = slide.background.fill
        if fill.type == 1:  # MSO_FILL.SOLID
            rgb = fill.fore_color.rgb
        elif fill.type == 5:  # MSO_FILL.BACKGROUND: inherited
            master = slide.slide_layout.slide_master.background.fill
            if master.type != 1:
                return 1.0
            rgb = master.fore_color.rgb
        else:
            return 1.0
        return math.dist(tuple(rgb), tuple(target)) / math.dist((0, 0, 0), (255, 255, 255))

    return 1.0 - sum(distance(slide) for slide in prs.slides) / len(prs.slides)


def check_transition(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    """Whether a slide has the transition ``rules["transition_type"]``.

    Slide ``rules["slide_idx"]`` (0-based: file ``ppt/slides/slideN+1.xml``) needs a ``p:transition``
    holding a ``p:<rules["transition_type"]>`` element (e.g. ``dissolve``).

    A missing file scores 0:

    >>> check_transition("missing.pptx", {"slide_idx": 0, "transition_type": "dissolve"})
    0.0
    """
    if not result:
        return 0.0
    name = f"ppt/slides/slide{int(rules['slide_idx']) + 1}.xml"
    try:
        with zipfile.ZipFile(str(result)) as archive:
            root = ElementTree.fromstring(archive.read(name))
    except (OSError, KeyError, zipfile.BadZipFile, ElementTree.ParseError):
        return 0.0
    transition = root.find(f".//{{{P_NS}}}transition")
    if transition is None:
        return 0.0
    return float(transition.find(f".//{{{P_NS}}}{rules['transition_type']}") is not None)


def check_page_number_colors(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    """Whether the slide numbers have the color ``rules["color"]``.

    The slide number color is (OSWorld's reading) the second-to-last ``a:srgbClr`` in a solid fill of
    ``slideMaster1.xml``. ``red``, ``blue``, ``green``: that channel beats both others by over 50;
    ``black``: all channels under 50; another color name accepts any value.

    A missing file scores 0:

    >>> check_page_number_colors("missing.pptx", {"color": "red"})
    0.0
    """
    if not result:
        return 0.0
    try:
        with zipfile.ZipFile(str(result)) as archive:
            root = ElementTree.fromstring(archive.read("ppt/slideMasters/slideMaster1.xml"))
    except (OSError, KeyError, zipfile.BadZipFile, ElementTree.ParseError):
        return 0.0
    colors = root.findall(f".//{{{A_NS}}}solidFill//{{{A_NS}}}srgbClr")
    if len(colors) < 2 or not colors[-2].get("val"):
        return 0.0
    value = str(colors[-2].get("val"))
    try:
        r, g, b = (int(value[i:i + 2], 16) for i in (0, 2, 4))
    except ValueError:
        return 0.0
    checks = {"red": r > g + 50 and r > b + 50, "blue": b > g + 50 and b > r + 50,
              "green": g > r + 50 and g > b + 50, "black": r < 50 and g < 50 and b < 50}
    return float(checks.get(rules["color"], True))


def check_presenter_console_disable(result: Any, expected: Any = None, **options: Any) -> float:
    """Whether ``registrymodifications.xcu`` turns Impress's presenter screen off (``EnablePresenterScreen`` false).

    A missing file scores 0:

    >>> check_presenter_console_disable("missing.xcu")
    0.0
    """
    value = _registry_value(result, "/org.openoffice.Office.Impress/Misc/Start", "EnablePresenterScreen")
    return float(value is not None and value.strip().lower() == "false")


def check_auto_saving_time(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    """Whether ``registrymodifications.xcu`` sets ``AutoSaveTimeIntervall`` to ``rules["minutes"]``.

    A missing file scores 0:

    >>> check_auto_saving_time("missing.xcu", {"minutes": 3})
    0.0
    """
    value = _registry_value(result, "/org.openoffice.Office.Common/Save/Document", "AutoSaveTimeIntervall")
    try:
        return float(value is not None and int(value) == int(rules["minutes"]))
    except ValueError:
        return 0.0


PPTX_METRICS: dict[str, Callable[..., float]] = {
    "check_auto_saving_time": check_auto_saving_time,
    "check_image_stretch_and_center": check_image_stretch_and_center,
    "check_page_number_colors": check_page_number_colors,
    "check_presenter_console_disable": check_presenter_console_disable,
    "check_slide_orientation_Portrait": check_slide_orientation_Portrait,
    "check_strikethrough": check_strikethrough,
    "check_transition": check_transition,
    "compare_pptx_files": compare_pptx_files,
    "evaluate_presentation_fill_to_rgb_distance": evaluate_presentation_fill_to_rgb_distance,
}
"""OSWorld's Impress metric names -> functions."""
