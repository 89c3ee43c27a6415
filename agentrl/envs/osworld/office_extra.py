"""OSWorld's extra LibreOffice and os-domain getters and metrics.

Getters are ``getter(client, spec)`` (``client``: a :class:`~agentrl.envs.osworld.server.DesktopClient`);
metrics keep OSWorld's signature ``metric(result, expected_or_rules, **options) -> float``; setup steps are
``step(client, parameters)``. The three dicts below are merged by :mod:`agentrl.envs.osworld.app_evaluators`.

Ported from OSWorld's ``metrics/basic_os.py`` (the os domain), ``metrics/slides.py`` (``check_left_panel``),
``metrics/docs.py`` (``check_highlighted_words``, ``evaluate_colored_words_in_tables``) and ``getters/impress.py``
(``audio_in_slide``, ``background_image_in_slide``).

=================================== =========================================================================
``check_gnome_favorite_apps``       ``gsettings`` list text holds exactly ``rules["expected"]`` (any order)
``is_utc_0``                        ``timedatectl status``'s ``Time zone:`` line ends in ``+0000)``
``check_text_enlarged``             ``gsettings``' text-scaling-factor is above 1.0
``check_moved_jpgs``                a ``list_directory`` tree's children are exactly ``rules["expected"]``
``check_left_panel``                the accessibility tree shows Impress' left (slide) pane
``check_highlighted_words``         same ODT text as the gold file and no yellow (``#ffff00``) highlight
``evaluate_colored_words_in_tables`` same DOCX text as the gold file; table words starting with a vowel red,
                                    the others blue (CIEDE2000 distance <= ``threshold``)
``audio_in_slide`` (getter)         local path of the audio of slide ``slide_index`` of a pptx on the desktop
``background_image_in_slide`` (g.)  local path of the background picture of that slide
=================================== =========================================================================

Our desktop is Debian with xfwm4, not GNOME: the gsettings metrics read the text they are given with OSWorld's
semantics (the desktop has ``gsettings`` from libglib2.0-bin, with dconf).
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
from agentrl.envs.osworld.metrics_docx import compare_docx_files

__all__ = [
    "GETTERS",
    "METRICS",
    "SETUP_STEPS",
    "audio_in_slide",
    "background_image_in_slide",
    "check_gnome_favorite_apps",
    "check_highlighted_words",
    "check_left_panel",
    "check_moved_jpgs",
    "check_text_enlarged",
    "delta_e_ciede2000",
    "evaluate_colored_words_in_tables",
    "is_utc_0",
    "rgb_to_lab",
]

INSTALL = "pip install 'agentrl-gym[osworld-office]'"

# ODF namespaces (content.xml of an .odt).
_TEXT_NS = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
_STYLE_NS = "urn:oasis:names:tc:opendocument:xmlns:style:1.0"
_FO_NS = "urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"
_OFFICE_NS = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"

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


# --------------------------------------------------------------------------------------------- os domain


def check_gnome_favorite_apps(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    r"""1 if the ``gsettings`` list in ``result`` holds the same apps as ``rules["expected"]``, in any order.

    ``result`` is ``gsettings get org.gnome.shell favorite-apps`` output, a GVariant string array such as
    ``['a.desktop', 'b.desktop']`` (``@as []`` when empty). OSWorld ``eval``s it; this parses it as a literal.
    The lengths must match too, so a duplicated entry scores 0.

    >>> check_gnome_favorite_apps("['thunderbird.desktop', 'vim.desktop']\n", {"expected": ["vim.desktop",
    ...                           "thunderbird.desktop"]})
    1.0
    >>> check_gnome_favorite_apps("['thunderbird.desktop']", {"expected": ["vim.desktop", "thunderbird.desktop"]})
    0.0
    """
    if not isinstance(result, str):
        return 0.0
    text = result.strip()
    if text.startswith("@as "):  # GVariant's type annotation of an empty (or typed) string array
        text = text[len("@as ") :]
    try:
        apps = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return 0.0
    if not isinstance(apps, list | tuple):
        return 0.0
    expected = list(rules["expected"])
    if len(apps) != len(expected):
        return 0.0
    return float(set(apps) == set(expected))


def _time_zone_line(output: str) -> str | None:
    lines = output.split("\n")
    for line in lines:
        if line.strip().startswith("Time zone:"):
            return line
    # OSWorld reads the fourth line, which is "Time zone:" in timedatectl's fixed layout.
    return lines[3] if len(lines) > 3 else None


def is_utc_0(result: Any, expected: Any = None, **options: Any) -> float:
    r"""1 if ``timedatectl status``' ``Time zone:`` line ends in ``+0000)`` (a UTC+0 zone, e.g. ``Etc/UTC``).

    OSWorld takes the fourth output line, which is that line in timedatectl's layout; this finds the line
    by its label, so a missing or reordered line cannot score the wrong one.

    >>> is_utc_0("               Local time: Thu 2024-01-25 12:56:06 WET\n"
    ...          "           Universal time: Thu 2024-01-25 12:56:06 UTC\n"
    ...          "                 RTC time: Thu 2024-01-25 12:56:05\n"
    ...          "                Time zone: Atlantic/Faroe (WET, +0000)\n")
    1.0
    >>> is_utc_0("                Time zone: Asia/Tokyo (JST, +0900)\n")
    0.0
    """
    if not isinstance(result, str):
        return 0.0
    line = _time_zone_line(result)
    return float(line is not None and line.rstrip().endswith("+0000)"))


def check_text_enlarged(result: Any, expected: Any = None, **options: Any) -> float:
    r"""1 if ``result`` (``gsettings get org.gnome.desktop.interface text-scaling-factor``) is above 1.0.

    >>> check_text_enlarged("1.25\n"), check_text_enlarged("1.0"), check_text_enlarged("No such schema")
    (1.0, 0.0, 0.0)
    """
    if result is None:
        return 0.0
    try:
        factor = float(str(result).strip())
    except ValueError:
        return 0.0
    return float(factor > 1.0)


def check_moved_jpgs(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    """1 if the children of a ``list_directory`` tree are exactly ``rules["expected"]`` (names, any order).

    >>> tree = {"name": "cpjpg", "type": "directory", "children": [{"name": "b.jpg", "type": "file"},
    ...                                                            {"name": "a.jpg", "type": "file"}]}
    >>> check_moved_jpgs(tree, {"expected": ["a.jpg", "b.jpg"]}), check_moved_jpgs(tree, {"expected": ["a.jpg"]})
    (1.0, 0.0)
    """
    if not isinstance(result, Mapping):
        return 0.0
    children = result.get("children")
    if not isinstance(children, list):
        return 0.0
    moved = [node.get("name") for node in children if isinstance(node, Mapping)]
    expected = list(rules["expected"])
    if len(moved) != len(expected):
        return 0.0
    return float(set(moved) == set(expected))


# ------------------------------------------------------------------------------------ LibreOffice Impress


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


# ------------------------------------------------------------------------------------- LibreOffice Writer


def check_highlighted_words(result: Any, expected: Any, **options: Any) -> float:
    """1 if the ``.odt`` ``result`` has ``expected``'s text and no yellow-highlighted span left.

    The texts are compared as :func:`~agentrl.envs.osworld.metrics_docx.compare_docx_files` does (OSWorld
    calls it first). Then, as OSWorld does, every ``text:span`` of ``content.xml`` whose automatic style has
    a property ``fo:background-color="#ffff00"`` is a highlight, and any highlight scores 0.

    A missing file (``None`` or an empty path) scores 0:

    >>> check_highlighted_words(None, "gold.odt"), check_highlighted_words("result.odt", "")
    (0.0, 0.0)
    """
    if not result or not expected:
        return 0.0
    if not compare_docx_files(result, expected):
        return 0.0
    try:
        with zipfile.ZipFile(str(result)) as archive:
            root = ElementTree.fromstring(archive.read("content.xml"))
    except (OSError, KeyError, zipfile.BadZipFile, ElementTree.ParseError):
        return 0.0
    yellow: set[str] = set()
    for styles in root.iter(f"{{{_OFFICE_NS}}}automatic-styles"):
        for style in styles:
            name = style.get(f"{{{_STYLE_NS}}}name")
            if name and any(prop.get(f"{{{_FO_NS}}}background-color") == "#ffff00" for prop in style):
                yellow.add(name)
    for span in root.iter(f"{{{_TEXT_NS}}}span"):
        if span.get(f"{{{_TEXT_NS}}}style-name") in yellow:
            return 0.0
    return 1.0


def rgb_to_lab(rgb: Sequence[float]) -> tuple[float, float, float]:
    """CIE L*a*b* (D65, 2°) of an sRGB colour given as three 0-255 values, as scikit-image's ``rgb2lab``.

    >>> [round(v, 2) for v in rgb_to_lab((255, 0, 0))]
    [53.24, 80.09, 67.2]
    """
    linear = []
    for channel in rgb:
        c = float(channel) / 255.0
        linear.append(((c + 0.055) / 1.055) ** 2.4 if c > 0.04045 else c / 12.92)
    r, g, b = linear
    x = (0.412453 * r + 0.357580 * g + 0.180423 * b) / 0.95047
    y = 0.212671 * r + 0.715160 * g + 0.072169 * b
    z = (0.019334 * r + 0.119193 * g + 0.950227 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1.0 / 3.0) if t > 0.008856 else 7.787 * t + 16.0 / 116.0

    fx, fy, fz = f(x), f(y), f(z)
    return 116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz)


def delta_e_ciede2000(lab1: Sequence[float], lab2: Sequence[float]) -> float:
    """CIEDE2000 colour difference of two L*a*b* colours (kL = kC = kH = 1), as scikit-image's.

    >>> round(delta_e_ciede2000((50.0, 2.6772, -79.7751), (50.0, 0.0, -82.7485)), 4)  # Sharma et al., pair 1
    2.0425
    >>> round(delta_e_ciede2000((50.0, 2.5, 0.0), (73.0, 25.0, -18.0)), 4)  # pair 18
    27.1492
    """
    l1, a1, b1 = (float(v) for v in lab1)
    l2, a2, b2 = (float(v) for v in lab2)
    c_bar = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2.0
    g = 0.5 * (1.0 - math.sqrt(c_bar**7 / (c_bar**7 + 25.0**7)))
    a1p, a2p = a1 * (1.0 + g), a2 * (1.0 + g)
    c1p, c2p = math.hypot(a1p, b1), math.hypot(a2p, b2)
    h1p = math.atan2(b1, a1p) % (2 * math.pi)
    h2p = math.atan2(b2, a2p) % (2 * math.pi)
    cc = c1p * c2p

    dl = l2 - l1
    dc = c2p - c1p
    dh = h2p - h1p
    if cc == 0:
        dh = 0.0
    elif dh > math.pi:
        dh -= 2 * math.pi
    elif dh < -math.pi:
        dh += 2 * math.pi
    dh_big = 2.0 * math.sqrt(cc) * math.sin(dh / 2.0)

    l_bar = (l1 + l2) / 2.0
    cp_bar = (c1p + c2p) / 2.0
    h_sum = h1p + h2p
    if cc == 0:
        h_bar = h_sum
    elif abs(h1p - h2p) > math.pi:
        h_bar = (h_sum + 2 * math.pi) / 2.0 if h_sum < 2 * math.pi else (h_sum - 2 * math.pi) / 2.0
    else:
        h_bar = h_sum / 2.0

    t = (
        1.0
        - 0.17 * math.cos(h_bar - math.radians(30))
        + 0.24 * math.cos(2 * h_bar)
        + 0.32 * math.cos(3 * h_bar + math.radians(6))
        - 0.20 * math.cos(4 * h_bar - math.radians(63))
    )
    sl = 1.0 + 0.015 * (l_bar - 50.0) ** 2 / math.sqrt(20.0 + (l_bar - 50.0) ** 2)
    sc = 1.0 + 0.045 * cp_bar
    sh = 1.0 + 0.015 * cp_bar * t
    delta_theta = math.radians(30) * math.exp(-(((math.degrees(h_bar) - 275.0) / 25.0) ** 2))
    rc = 2.0 * math.sqrt(cp_bar**7 / (cp_bar**7 + 25.0**7))
    rt = -math.sin(2 * delta_theta) * rc
    lt, ct, ht = dl / sl, dc / sc, dh_big / sh
    return math.sqrt(max(lt * lt + ct * ct + ht * ht + rt * ct * ht, 0.0))


def evaluate_colored_words_in_tables(result: Any, expected: Any, **options: Any) -> float:
    """1 if the ``.docx`` ``result`` has ``expected``'s text and every table word is coloured by its first letter.

    Every non-empty run in a table cell whose text starts with a vowel (``aeiou``, any case) must be red,
    and every other run blue: within ``threshold`` (option, default 3.5) CIEDE2000 of ``#FF0000`` /
    ``#0000FF``. A run without an explicit RGB colour scores 0 (OSWorld fails on it the same way).

    A missing file (``None`` or an empty path) scores 0:

    >>> evaluate_colored_words_in_tables(None, "gold.docx"), evaluate_colored_words_in_tables("result.docx", "")
    (0.0, 0.0)
    """
    if not result or not expected:
        return 0.0
    if not compare_docx_files(result, expected):
        return 0.0
    try:
        import docx
    except ImportError as error:
        raise DependencyNotInstalled("python-docx", command=INSTALL) from error
    try:
        document = docx.Document(str(result))
    except Exception:  # a truncated or non-docx file scores 0, as in OSWorld
        return 0.0
    threshold = float(options.get("threshold", 3.5))
    red, blue = rgb_to_lab((255, 0, 0)), rgb_to_lab((0, 0, 255))
    for table in document.tables:
        for row in table.rows:
            for cell in row.cells:
                for paragraph in cell.paragraphs:
                    for run in paragraph.runs:
                        word = run.text
                        if not word:
                            continue
                        rgb = run.font.color.rgb
                        if rgb is None:  # no colour, "auto" or a theme colour: not red/blue as OSWorld needs
                            return 0.0
                        target = red if word[0].lower() in "aeiou" else blue
                        if delta_e_ciede2000(rgb_to_lab(tuple(rgb)), target) > threshold:
                            return 0.0
    return 1.0


# --------------------------------------------------------------------------------------- Impress getters


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
    "check_gnome_favorite_apps": check_gnome_favorite_apps,
    "is_utc_0": is_utc_0,
    "check_text_enlarged": check_text_enlarged,
    "check_moved_jpgs": check_moved_jpgs,
    "check_left_panel": check_left_panel,
    "check_highlighted_words": check_highlighted_words,
    "evaluate_colored_words_in_tables": evaluate_colored_words_in_tables,
}
"""OSWorld metric name -> function."""

SETUP_STEPS: dict[str, Callable[..., None]] = {}
"""OSWorld setup step type -> ``step(client, parameters)``."""
