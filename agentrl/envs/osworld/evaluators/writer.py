"""OSWorld's Writer (``.docx`` / ``.odt``) metrics, with OSWorld's semantics (``metrics/docs.py``).

Each metric takes the paths the task's getters returned (``result`` first) and returns ``0.0`` or ``1.0``
(:func:`check_tabstops` and ``content_only`` comparisons return a similarity in ``[0, 1]``). A missing
or unreadable file scores 0, as in OSWorld. ``.docx`` files are read with python-docx
(``pip install 'agentrl-gym[osworld-office]'``); ``.odt`` text is read from ``content.xml`` directly.

:data:`METRICS` maps OSWorld's metric names to the functions here; with OSWorld's ``metrics/docs.py``
``check_highlighted_words`` (same ODT text, no yellow highlight) and ``evaluate_colored_words_in_tables``
(table words coloured by their first letter, CIEDE2000 distance).
"""

from __future__ import annotations

import difflib
import math
import re
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any
from xml.etree import ElementTree

from agentrl.core.errors import DependencyNotInstalled

__all__ = [
    "GETTERS",
    "METRICS",
    "check_highlighted_words",
    "check_italic_font_size_14",
    "check_tabstops",
    "compare_contains_image",
    "compare_docx_files",
    "compare_docx_files_and_ignore_new_lines",
    "compare_docx_images",
    "compare_docx_lines",
    "compare_docx_tables",
    "compare_font_names",
    "compare_insert_equation",
    "compare_line_spacing",
    "compare_subscript_contains",
    "contains_page_break",
    "delta_e_ciede2000",
    "evaluate_colored_words_in_tables",
    "evaluate_strike_through_last_paragraph",
    "find_default_font",
    "has_page_numbers_in_footers",
    "is_first_line_centered",
    "open_docx",
    "rgb_to_lab",
]

INSTALL = "pip install 'agentrl-gym[osworld-office]'  (or: pip install python-docx)"


W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


TEXT_NS = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"


REGISTRY_NS = "http://openoffice.org/2001/registry"


def open_docx(path: Any) -> Any | None:
    """The python-docx ``Document`` at ``path``, or ``None`` when there is no path or it does not parse.

    Raises:
        DependencyNotInstalled: python-docx is missing (the message names the install command).
    """
    try:
        import docx
    except ImportError as error:
        raise DependencyNotInstalled("python-docx", command=INSTALL) from error
    if not path:
        return None
    try:
        return docx.Document(str(path))
    except Exception:  # a truncated or non-docx file scores 0, as in OSWorld
        return None


def _odt_paragraphs(path: str) -> list[str] | None:
    """``text:p`` texts of an ODT, as OSWorld reads them: direct text plus the direct text of ``text:span``."""
    try:
        with zipfile.ZipFile(path) as archive:
            root = ElementTree.fromstring(archive.read("content.xml"))
    except (OSError, KeyError, zipfile.BadZipFile, ElementTree.ParseError):
        return None
    span = f"{{{TEXT_NS}}}span"
    texts: list[str] = []
    for paragraph in root.iter(f"{{{TEXT_NS}}}p"):
        parts = [paragraph.text or ""]
        for child in paragraph:
            if child.tag == span:
                parts.append(child.text or "")
                parts.extend(grandchild.tail or "" for grandchild in child)
            parts.append(child.tail or "")
        texts.append("".join(parts))
    return texts


def _squash(paragraphs: list[str], ignore_case: bool) -> str:
    text = re.sub(r"\s+", " ", "\n".join(paragraphs)).strip()
    return text.lower() if ignore_case else text


def compare_docx_files(result: Any, expected: Any, **options: Any) -> float:
    """Whether two ``.docx`` (or two ``.odt``) files hold the same paragraph texts.

    Options (OSWorld's defaults): ``ignore_blanks=True`` joins the paragraphs and collapses every run of
    whitespace before comparing (so paragraph breaks do not count); ``False`` compares paragraph by
    paragraph, and the counts must match. ``ignore_case=False``; ``ignore_order=False`` sorts the
    paragraphs first; ``content_only=False`` returns a similarity ratio of the collapsed texts
    instead of 0/1 (OSWorld uses rapidfuzz's ``fuzz.ratio``; this uses difflib's ratio, which is
    never higher). Files of different or other types score 0.

    >>> compare_docx_files(None, "b.docx")
    0.0
    """
    if not result or not expected:
        return 0.0
    ignore_blanks = options.get("ignore_blanks", True)
    ignore_case = options.get("ignore_case", False)
    ignore_order = options.get("ignore_order", False)
    content_only = options.get("content_only", False)
    first, second = str(result), str(expected)
    paragraphs1: list[str] | None
    paragraphs2: list[str] | None
    if first.endswith(".docx") and second.endswith(".docx"):
        doc1, doc2 = open_docx(first), open_docx(second)
        if doc1 is None or doc2 is None:
            return 0.0
        paragraphs1 = [p.text for p in doc1.paragraphs]
        paragraphs2 = [p.text for p in doc2.paragraphs]
    elif first.endswith(".odt") and second.endswith(".odt"):
        paragraphs1, paragraphs2 = _odt_paragraphs(first), _odt_paragraphs(second)
        if paragraphs1 is None or paragraphs2 is None:
            return 0.0
    else:
        return 0.0
    if ignore_order:
        paragraphs1, paragraphs2 = sorted(paragraphs1), sorted(paragraphs2)
    if content_only:
        text1, text2 = _squash(paragraphs1, ignore_case), _squash(paragraphs2, ignore_case)
        return difflib.SequenceMatcher(None, text1, text2, autojunk=False).ratio()
    if ignore_blanks:
        return float(_squash(paragraphs1, ignore_case) == _squash(paragraphs2, ignore_case))
    if len(paragraphs1) != len(paragraphs2):
        return 0.0
    if ignore_case:
        paragraphs1 = [p.lower() for p in paragraphs1]
        paragraphs2 = [p.lower() for p in paragraphs2]
    return float(paragraphs1 == paragraphs2)


def compare_docx_files_and_ignore_new_lines(result: Any, expected: Any, **options: Any) -> float:
    """:func:`compare_docx_files` on ``.docx`` files after dropping empty paragraphs (option ``ignore_blanks=True``).

    A missing file scores 0:

    >>> compare_docx_files_and_ignore_new_lines("missing.docx", "expected.docx")
    0.0
    """
    if not result or not expected or not (str(result).endswith(".docx") and str(expected).endswith(".docx")):
        return 0.0
    doc1, doc2 = open_docx(result), open_docx(expected)
    if doc1 is None or doc2 is None:
        return 0.0
    paragraphs1 = [p.text for p in doc1.paragraphs if p.text != ""]
    paragraphs2 = [p.text for p in doc2.paragraphs if p.text != ""]
    if options.get("ignore_blanks", True):
        return float(_squash(paragraphs1, False) == _squash(paragraphs2, False))
    return float(paragraphs1 == paragraphs2)


def compare_docx_lines(result: Any, expected: Any, **options: Any) -> float:
    """Whether the sets of non-empty, stripped paragraph texts are equal (order and repeats ignored).

    A missing file scores 0:

    >>> compare_docx_lines("missing.docx", "expected.docx")
    0.0
    """
    doc1, doc2 = open_docx(result), open_docx(expected)
    if doc1 is None or doc2 is None:
        return 0.0
    lines1 = {p.text.strip() for p in doc1.paragraphs if p.text.strip()}
    lines2 = {p.text.strip() for p in doc2.paragraphs if p.text.strip()}
    return float(lines1 == lines2)


def compare_docx_tables(result: Any, expected: Any, **options: Any) -> float:
    """Whether both documents have the same tables: count, shape, and every cell's stripped text.

    A missing file scores 0:

    >>> compare_docx_tables("missing.docx", "expected.docx")
    0.0
    """
    doc1, doc2 = open_docx(result), open_docx(expected)
    if doc1 is None or doc2 is None:
        return 0.0
    tables1, tables2 = doc1.tables, doc2.tables
    if len(tables1) != len(tables2):
        return 0.0
    for table1, table2 in zip(tables1, tables2, strict=True):
        if len(table1.rows) != len(table2.rows) or len(table1.columns) != len(table2.columns):
            return 0.0
        for i in range(len(table1.rows)):
            for j in range(len(table1.columns)):
                if table1.cell(i, j).text.strip() != table2.cell(i, j).text.strip():
                    return 0.0
    return 1.0


def compare_docx_images(result: Any, expected: Any, **options: Any) -> float:
    """Whether both documents embed the same images (same count, same decoded pixels, in relationship order).

    A missing file scores 0:

    >>> compare_docx_images("missing.docx", "expected.docx")
    0.0
    """
    doc1, doc2 = open_docx(result), open_docx(expected)
    if doc1 is None or doc2 is None:
        return 0.0
    from io import BytesIO

    from PIL import Image

    def images(doc: Any) -> list[bytes]:
        return [rel.target_part.blob for rel in doc.part.rels.values() if "image" in rel.reltype]

    images1, images2 = images(doc1), images(doc2)
    if len(images1) != len(images2):
        return 0.0
    for blob1, blob2 in zip(images1, images2, strict=True):
        if Image.open(BytesIO(blob1)).tobytes() != Image.open(BytesIO(blob2)).tobytes():
            return 0.0
    return 1.0


def compare_line_spacing(result: Any, expected: Any, **options: Any) -> float:
    """Same text (:func:`compare_docx_files` defaults) and the same line spacing, paragraph by paragraph.

    A missing file scores 0:

    >>> compare_line_spacing("missing.docx", "expected.docx")
    0.0
    """
    if not compare_docx_files(result, expected):
        return 0.0
    doc1, doc2 = open_docx(result), open_docx(expected)
    if doc1 is None or doc2 is None or len(doc1.paragraphs) != len(doc2.paragraphs):
        return 0.0
    return float(all(p1.paragraph_format.line_spacing == p2.paragraph_format.line_spacing
                     for p1, p2 in zip(doc1.paragraphs, doc2.paragraphs, strict=True)))


def _run_pairs(result: Any, expected: Any) -> Iterator[tuple[Any, Any]] | None:
    """The two documents' runs side by side, paragraph by paragraph (OSWorld's pairing); ``None`` if one is missing."""
    doc1, doc2 = open_docx(result), open_docx(expected)
    if doc1 is None or doc2 is None:
        return None
    return (
        (run1, run2)
        for para1, para2 in zip(doc1.paragraphs, doc2.paragraphs, strict=False)
        for run1, run2 in zip(para1.runs, para2.runs, strict=False)
    )


def compare_insert_equation(result: Any, expected: Any, **options: Any) -> float:
    """Same text, and some run pair (paragraph by paragraph) where both runs hold an embedded object (``w:object``).

    A missing file scores 0:

    >>> compare_insert_equation("missing.docx", "expected.docx")
    0.0
    """
    if not compare_docx_files(result, expected):
        return 0.0
    pairs = _run_pairs(result, expected)
    return float(pairs is not None and any(r1.element.xpath(".//w:object") and r2.element.xpath(".//w:object")
                                           for r1, r2 in pairs))


def compare_subscript_contains(result: Any, expected: Any, **options: Any) -> float:
    """Whether some run pair (paragraph by paragraph, run by run) is subscript in both documents.

    A missing file scores 0:

    >>> compare_subscript_contains("missing.docx", "expected.docx")
    0.0
    """
    pairs = _run_pairs(result, expected)
    return float(pairs is not None and any(r1.font.subscript and r2.font.subscript for r1, r2 in pairs))


def compare_contains_image(result: Any, expected: Any, **options: Any) -> float:
    """0 if some run pair (paragraph by paragraph, run by run) has a drawing in one document only.

    A missing file scores 0:

    >>> compare_contains_image("missing.docx", "expected.docx")
    0.0
    """
    pairs = _run_pairs(result, expected)
    return float(pairs is not None and all(("graphicData" in r1.element.xml) == ("graphicData" in r2.element.xml)
                                           for r1, r2 in pairs))


def compare_font_names(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    """Whether every run of the document names the font ``rules["font_name"]`` explicitly.

    A missing file scores 0:

    >>> compare_font_names("missing.docx", {"font_name": "Arial"})
    0.0
    """
    doc = open_docx(result)
    if doc is None:
        return 0.0
    wanted = rules["font_name"]
    return float(all(run.font.name == wanted for p in doc.paragraphs for run in p.runs))


def check_italic_font_size_14(result: Any, expected: Any, **options: Any) -> float:
    """Same text as ``expected``, and every italic run of ``result`` is 14 pt.

    A missing file scores 0:

    >>> check_italic_font_size_14("missing.docx", "expected.docx")
    0.0
    """
    if not compare_docx_files(result, expected):
        return 0.0
    doc = open_docx(result)
    if doc is None:
        return 0.0
    for paragraph in doc.paragraphs:
        for run in paragraph.runs:
            if run.italic and (run.font.size is None or run.font.size.pt != 14):
                return 0.0
    return 1.0


def evaluate_strike_through_last_paragraph(result: Any, expected: Any, **options: Any) -> float:
    """Same text as ``expected``, and every run of the last paragraph of ``result`` is struck through.

    A missing file scores 0:

    >>> evaluate_strike_through_last_paragraph("missing.docx", "expected.docx")
    0.0
    """
    if not compare_docx_files(result, expected):
        return 0.0
    doc = open_docx(result)
    if doc is None or not doc.paragraphs:
        return 0.0
    return float(all(run.font.strike for run in doc.paragraphs[-1].runs))


def has_page_numbers_in_footers(result: Any, expected: Any = None, **options: Any) -> float:
    """Whether every section's footer has a digit in its first paragraph (a page number field renders one).

    A missing file scores 0:

    >>> has_page_numbers_in_footers("missing.docx")
    0.0
    """
    doc = open_docx(result)
    if doc is None:
        return 0.0
    for section in doc.sections:
        paragraphs = section.footer.paragraphs
        text = paragraphs[0].text if paragraphs else ""
        if not any(char.isdigit() for char in text):
            return 0.0
    return 1.0


def is_first_line_centered(result: Any, expected: Any = None, **options: Any) -> float:
    """Whether the first paragraph is centered.

    A missing file scores 0:

    >>> is_first_line_centered("missing.docx")
    0.0
    """
    doc = open_docx(result)
    if doc is None or not doc.paragraphs:
        return 0.0
    from docx.enum.text import WD_PARAGRAPH_ALIGNMENT

    return float(doc.paragraphs[0].paragraph_format.alignment == WD_PARAGRAPH_ALIGNMENT.CENTER)


def contains_page_break(result: Any, expected: Any = None, **options: Any) -> float:
    """Whether some run of a body paragraph holds a page break (``<w:br w:type="page"/>``).

    A missing file scores 0:

    >>> contains_page_break("missing.docx")
    0.0
    """
    doc = open_docx(result)
    if doc is None:
        return 0.0
    for paragraph in doc.paragraphs:
        for run in paragraph.runs:
            for br in run.element.iter(f"{{{W_NS}}}br"):
                if br.get(f"{{{W_NS}}}type") == "page":
                    return 1.0
    return 0.0


def check_tabstops(result: Any, expected: Any, **options: Any) -> float:
    """Similarity of the tab stops of the non-empty paragraphs, ``1 - mean(sum |position drift| / text width)``.

    The non-empty paragraph counts must match, and paragraph by paragraph the tab stops (ignoring
    cleared stops and a left stop at 0) must have the same count and alignments, else 0. Options:
    ``word_number_split_by_tabstop=N`` (with ``index``, default 0) also requires the ``index``-th
    tab-separated part of every ``result`` paragraph to hold exactly ``N`` words.

    A missing file scores 0:

    >>> check_tabstops("missing.docx", "expected.docx")
    0.0
    """
    doc1, doc2 = open_docx(result), open_docx(expected)
    if doc1 is None or doc2 is None:
        return 0.0
    from docx.enum.text import WD_TAB_ALIGNMENT

    paragraphs1 = [p for p in doc1.paragraphs if p.text.strip()]
    paragraphs2 = [p for p in doc2.paragraphs if p.text.strip()]
    if len(paragraphs1) != len(paragraphs2) or not paragraphs1:
        return 0.0
    number = options.get("word_number_split_by_tabstop")
    if number is not None:
        index = options.get("index", 0)
        for paragraph in paragraphs1:
            parts = paragraph.text.split("\t")
            if index >= len(parts) or len([w for w in re.split(r"\s", parts[index]) if w.strip()]) != number:
                return 0.0
    section = doc2.sections[0]
    width = section.page_width - section.left_margin - section.right_margin

    def kept(paragraph: Any) -> list[Any]:
        return [t for t in paragraph.paragraph_format.tab_stops
                if not (t.alignment == WD_TAB_ALIGNMENT.CLEAR
                        or (t.alignment == WD_TAB_ALIGNMENT.LEFT and t.position == 0))]

    minus = 0.0
    for p1, p2 in zip(paragraphs1, paragraphs2, strict=True):
        tabs1, tabs2 = kept(p1), kept(p2)
        if len(tabs1) != len(tabs2):
            return 0.0
        if any(t1.alignment != t2.alignment for t1, t2 in zip(tabs1, tabs2, strict=True)):
            return 0.0
        minus += sum(abs(t1.position - t2.position) for t1, t2 in zip(tabs1, tabs2, strict=True)) / width
    return 1.0 - minus / len(paragraphs1)


def _registry_value(path: Any, item_path: str, prop_name: str) -> str | None:
    """The ``<value>`` of ``<item oor:path=item_path><prop oor:name=prop_name>`` in a LibreOffice ``.xcu`` file."""
    if not path:
        return None
    try:
        root = ElementTree.parse(str(path)).getroot()
    except (OSError, ElementTree.ParseError):
        return None
    found: str | None = None
    for item in root.iter("item"):
        if item.get(f"{{{REGISTRY_NS}}}path") != item_path:
            continue
        for prop in item.iter("prop"):
            if prop.get(f"{{{REGISTRY_NS}}}name") == prop_name:
                value = prop.find("value")
                if value is not None:
                    found = value.text
    return found


def find_default_font(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    """Whether ``registrymodifications.xcu`` sets Writer's default (Standard) font to ``rules["font_name"]``.

    A missing file scores 0:

    >>> find_default_font("missing.xcu", {"font_name": "Arial"})
    0.0
    """
    font = _registry_value(result, "/org.openoffice.Office.Writer/DefaultFont", "Standard")
    return float(font is not None and font == rules["font_name"])


INSTALL = "pip install 'agentrl-gym[osworld-office]'"


# ODF namespaces (content.xml of an .odt).
_TEXT_NS = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"


_STYLE_NS = "urn:oasis:names:tc:opendocument:xmlns:style:1.0"


_FO_NS = "urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"


_OFFICE_NS = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"


def check_highlighted_words(result: Any, expected: Any, **options: Any) -> float:
    """1 if the ``.odt`` ``result`` has ``expected``'s text and no yellow-highlighted span left.

    The texts are compared as :func:`~agentrl.envs.osworld.evaluators.writer.compare_docx_files` does (OSWorld
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


GETTERS: dict[str, Callable[..., Any]] = {
}
"""OSWorld getter type -> ``getter(client, spec)``."""


METRICS: dict[str, Callable[..., float]] = {
    "check_highlighted_words": check_highlighted_words,
    "check_italic_font_size_14": check_italic_font_size_14,
    "check_tabstops": check_tabstops,
    "compare_contains_image": compare_contains_image,
    "compare_docx_files": compare_docx_files,
    "compare_docx_files_and_ignore_new_lines": compare_docx_files_and_ignore_new_lines,
    "compare_docx_images": compare_docx_images,
    "compare_docx_lines": compare_docx_lines,
    "compare_docx_tables": compare_docx_tables,
    "compare_font_names": compare_font_names,
    "compare_insert_equation": compare_insert_equation,
    "compare_line_spacing": compare_line_spacing,
    "compare_subscript_contains": compare_subscript_contains,
    "contains_page_break": contains_page_break,
    "evaluate_colored_words_in_tables": evaluate_colored_words_in_tables,
    "evaluate_strike_through_last_paragraph": evaluate_strike_through_last_paragraph,
    "find_default_font": find_default_font,
    "has_page_numbers_in_footers": has_page_numbers_in_footers,
    "is_first_line_centered": is_first_line_centered,
}
"""OSWorld metric name -> ``metric(result, expected_or_rules, **options)``."""
