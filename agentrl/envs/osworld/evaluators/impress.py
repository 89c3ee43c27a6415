"""OSWorld's Impress (``.pptx``) and LibreOffice-settings metrics, with OSWorld's semantics (``metrics/slides.py``).

The central one is :func:`compare_pptx_files`, which walks two presentations slide by slide and shape
by shape and returns 0 at the first difference its ``examine_*`` options look at. A missing or
unreadable file scores 0. Presentations are read with python-pptx
(``pip install 'agentrl-gym[osworld-office]'``); LibreOffice's ``registrymodifications.xcu`` and
slide XML are read with the standard library.

:data:`METRICS` maps OSWorld's metric names to the functions here, :data:`GETTERS` its two slide getters
(``audio_in_slide``, ``background_image_in_slide``, from OSWorld's ``getters/impress.py``); ``check_left_panel``
(``metrics/slides.py``) reads the accessibility tree for Impress' slide pane.
"""

from __future__ import annotations

import ast
import math
import posixpath
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse
from xml.etree import ElementTree

from agentrl.core.errors import DependencyNotInstalled
from agentrl.envs.osworld.evaluators.writer import _registry_value

__all__ = [
    "EXAMINE_DEFAULTS",
    "GETTERS",
    "METRICS",
    "audio_in_slide",
    "background_image_in_slide",
    "check_auto_saving_time",
    "check_image_stretch_and_center",
    "check_left_panel",
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


# OOXML namespaces (a .pptx slide and its relationships part).
_P_NS = "http://schemas.openxmlformats.org/presentationml/2006/main"


_A_NS = "http://schemas.openxmlformats.org/drawingml/2006/main"


_R_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


_PKG_REL_NS = "http://schemas.openxmlformats.org/package/2006/relationships"


# Accessibility-tree namespaces: OSWorld's ``check_left_panel`` names the old ``uri:deskat`` ones; OSWorld's
# current server (and :mod:`agentrl.envs.osworld.a11y`) write the ``accessibility.ubuntu.example.org`` ones.
_A11Y_STATE_NS = ("uri:deskat:state.at-spi.gnome.org", "https://accessibility.ubuntu.example.org/ns/state")


_A11Y_COMPONENT_NS = (
    "uri:deskat:component.at-spi.gnome.org",
    "https://accessibility.ubuntu.example.org/ns/component",
)


def _attribute(node: ElementTree.Element, namespaces: Sequence[str], name: str) -> str | None:
    for namespace in namespaces:
        value = node.get(f"{{{namespace}}}{name}")
        if value is not None:
            return value
    return None


def _xy(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, int | float) for v in value):
        return int(value[0]), int(value[1])
    return None


def check_left_panel(result: Any, expected: Any = None, **options: Any) -> float:
    """1 if a visible ``split-pane`` at its parent's origin lies in a ``panel`` of a ``root-pane``.

    That is how OSWorld recognises Impress' left (slide) pane in the accessibility tree: a ``split-pane``
    whose ``cp:parentcoord`` is ``(0, 0)`` and which has an ``st:visible`` state. Trees that give only
    screen coordinates (OSWorld's current server, and this desktop's) place the pane at its parent's
    origin when its ``cp:screencoord`` equals the parent node's. Both namespace spellings are read.

    >>> tree = ('<desktop-frame xmlns:st="https://accessibility.ubuntu.example.org/ns/state" '
    ...         'xmlns:cp="https://accessibility.ubuntu.example.org/ns/component"><root-pane><panel '
    ...         'cp:screencoord="(0, 64)"><split-pane st:visible="true" cp:screencoord="(0, 64)"/></panel>'
    ...         '</root-pane></desktop-frame>')
    >>> check_left_panel(tree), check_left_panel(tree.replace('"(0, 64)"/>', '"(220, 64)"/>'))
    (1.0, 0.0)
    """
    if not isinstance(result, str | bytes) or not result:
        return 0.0
    try:
        root = ElementTree.fromstring(result)
    except ElementTree.ParseError:
        return 0.0
    parents = {child: parent for parent in root.iter() for child in parent}
    for root_pane in root.iter("root-pane"):
        for panel in root_pane.iter("panel"):
            for split_pane in panel.iter("split-pane"):
                if not _attribute(split_pane, _A11Y_STATE_NS, "visible"):
                    continue
                parent_xy = _attribute(split_pane, _A11Y_COMPONENT_NS, "parentcoord")
                if parent_xy is not None:
                    if parent_xy == "(0, 0)":
                        return 1.0
                    continue
                # No parent-relative position: compare the screen positions of the pane and its parent.
                here = _xy(_attribute(split_pane, _A11Y_COMPONENT_NS, "screencoord"))
                parent = parents.get(split_pane)
                there = None if parent is None else _xy(_attribute(parent, _A11Y_COMPONENT_NS, "screencoord"))
                if here is not None and here == there:
                    return 1.0
    return 0.0


def _slide_relationships(archive: zipfile.ZipFile, slide_index: int) -> list[ElementTree.Element]:
    name = f"ppt/slides/_rels/slide{slide_index + 1}.xml.rels"
    if name not in archive.namelist():
        return []
    root = ElementTree.fromstring(archive.read(name))
    return list(root.iter(f"{{{_PKG_REL_NS}}}Relationship"))


def _media_path(client: Any, archive: zipfile.ZipFile, relationship: ElementTree.Element, dest: str) -> str | None:
    """Local path of the part or external file a slide relationship points at (``None`` when absent)."""
    target = relationship.get("Target") or ""
    if relationship.get("TargetMode") == "External" or target.startswith("file:"):
        # A linked file on the desktop: OSWorld fetches it with get_vm_file.
        path = unquote(urlparse(target).path) if target.startswith("file:") else target
        result: str | None = client._vm_file(path, dest)
        return result
    # A part of the package: relative to the slide's folder, or package-absolute with a leading "/".
    member = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join("ppt/slides", target))
    if member.startswith("../") or member not in archive.namelist():
        return None
    # OSWorld extracts the part under its own zip path next to the pptx copy (the cache dir); so does this.
    local = Path(client.cache_dir) / member
    local.parent.mkdir(parents=True, exist_ok=True)
    local.write_bytes(archive.read(member))
    return str(local)


def _open_pptx(client: Any, spec: Mapping[str, Any]) -> tuple[zipfile.ZipFile, int, str] | None:
    ppt_path = str(spec["ppt_file_path"])
    local = client._vm_file(ppt_path, posixpath.basename(ppt_path))
    if local is None:
        return None
    try:
        archive = zipfile.ZipFile(local)
    except (OSError, zipfile.BadZipFile):
        return None
    return archive, int(spec["slide_index"]), str(spec.get("dest") or "")


def audio_in_slide(client: Any, spec: Mapping[str, Any]) -> str | None:
    """Getter: local path of the (first) audio of slide ``slide_index`` of the desktop's ``ppt_file_path``.

    The audio is the first relationship of ``ppt/slides/_rels/slide<N+1>.xml.rels`` whose type names
    ``audio``: an embedded part is extracted into ``client.cache_dir``; a linked ``file://`` one is copied
    from the desktop to ``dest``. ``None`` when the file, the slide or an audio is missing.
    """
    opened = _open_pptx(client, spec)
    if opened is None:
        return None
    archive, slide_index, dest = opened
    with archive:
        try:
            relationships = _slide_relationships(archive, slide_index)
        except ElementTree.ParseError:
            return None
        for relationship in relationships:
            if "audio" in (relationship.get("Type") or ""):
                return _media_path(client, archive, relationship, dest)
    return None


def background_image_in_slide(client: Any, spec: Mapping[str, Any]) -> str | None:
    """Getter: local path of the background picture of slide ``slide_index`` of the desktop's ``ppt_file_path``.

    The picture is the ``a:blip`` ``r:embed`` of the slide's ``p:bg/p:bgPr`` fill, resolved through the
    slide's relationships (an image relationship): extracted into ``client.cache_dir`` when embedded,
    copied from the desktop to ``dest`` when linked. ``None`` when the slide has no picture background.
    """
    opened = _open_pptx(client, spec)
    if opened is None:
        return None
    archive, slide_index, dest = opened
    with archive:
        slide_name = f"ppt/slides/slide{slide_index + 1}.xml"
        if slide_name not in archive.namelist():
            return None
        try:
            slide = ElementTree.fromstring(archive.read(slide_name))
            relationships = _slide_relationships(archive, slide_index)
        except ElementTree.ParseError:
            return None
        image_id = None
        for background in slide.iter(f"{{{_P_NS}}}bgPr"):
            for blip in background.iter(f"{{{_A_NS}}}blip"):
                image_id = blip.get(f"{{{_R_NS}}}embed") or blip.get(f"{{{_R_NS}}}link")
                if image_id:
                    break
            if image_id:
                break
        if not image_id:
            return None
        for relationship in relationships:
            if relationship.get("Id") == image_id and "image" in (relationship.get("Type") or ""):
                return _media_path(client, archive, relationship, dest)
    return None


GETTERS: dict[str, Callable[..., Any]] = {
    "audio_in_slide": audio_in_slide,
    "background_image_in_slide": background_image_in_slide,
}
"""OSWorld getter type -> ``getter(client, spec)``."""


METRICS: dict[str, Callable[..., float]] = {
    "check_auto_saving_time": check_auto_saving_time,
    "check_image_stretch_and_center": check_image_stretch_and_center,
    "check_left_panel": check_left_panel,
    "check_page_number_colors": check_page_number_colors,
    "check_presenter_console_disable": check_presenter_console_disable,
    "check_slide_orientation_Portrait": check_slide_orientation_Portrait,
    "check_strikethrough": check_strikethrough,
    "check_transition": check_transition,
    "compare_pptx_files": compare_pptx_files,
    "evaluate_presentation_fill_to_rgb_distance": evaluate_presentation_fill_to_rgb_distance,
}
"""OSWorld metric name -> ``metric(result, expected_or_rules, **options)``."""
