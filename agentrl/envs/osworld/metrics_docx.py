"""OSWorld's Writer (``.docx`` / ``.odt``) metrics, with OSWorld's semantics (``metrics/docs.py``).

Each metric takes the paths the task's getters returned (``result`` first) and returns ``0.0`` or ``1.0``
(:func:`check_tabstops` and ``content_only`` comparisons return a similarity in ``[0, 1]``). A missing
or unreadable file scores 0, as in OSWorld. ``.docx`` files are read with python-docx
(``pip install 'agentrl-gym[osworld-office]'``); ``.odt`` text is read from ``content.xml`` directly.

:data:`DOCX_METRICS` maps OSWorld's metric names to the functions here.
"""

from __future__ import annotations

import difflib
import re
import zipfile
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from xml.etree import ElementTree

from agentrl.core.errors import DependencyNotInstalled

__all__ = [
    "DOCX_METRICS",
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
    "evaluate_strike_through_last_paragraph",
    "find_default_font",
    "has_page_numbers_in_footers",
    "is_first_line_centered",
    "open_docx",
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


DOCX_METRICS: dict[str, Callable[..., float]] = {
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
    "evaluate_strike_through_last_paragraph": evaluate_strike_through_last_paragraph,
    "find_default_font": find_default_font,
    "has_page_numbers_in_footers": has_page_numbers_in_footers,
    "is_first_line_centered": is_first_line_centered,
}
"""OSWorld's Writer metric names -> functions."""
