"""OSWorld's file metrics of the multi-app tasks (PDF, archives, CSV, HTML, EPUB, Python, text).

Getters are ``getter(client, spec)`` (``client``: a :class:`~agentrl.envs.osworld.client.DesktopClient`);
metrics keep OSWorld's signature ``metric(result, expected_or_rules, **options) -> float``.
The two dicts below are merged by :mod:`agentrl.envs.osworld.evaluators`.

Metrics (OSWorld's module in brackets; the semantics are OSWorld's, departures are named in each docstring):

======================================  =======================================================================
``compare_pdfs`` [chrome]               mean over file pairs of the fuzzy ratio of the PDFs' texts (pypdf)
``compare_pdf_images`` [chrome]         1 iff the PDFs have the same pages (OSWorld renders; here pypdf:
                                        page sizes, text and embedded images' pixels)
``check_pdf_pages`` [pdf]               ``operator.<relation>(page count, ref_value)``
``compare_csv`` [table]                 1 iff the files' lines are equal (``strict``, ``ignore_case``)
``compare_archive`` [chrome]            same member names, then the mean of the ``file_type`` metric per member
``compare_zip_files`` [vscode]          same names; PDFs' texts >= 95% similar, other members byte-equal
``compare_htmls`` [chrome]              1 iff the two documents' nodes agree (tag, attributes, stripped text)
``compare_epub`` [others]               product of :func:`diff_text_file` over toc/opf/html members
``diff_text_file`` [general]            ``difflib`` ratio of the two files' line lists
``compare_result_files`` [vscode]       same stripped text, or the same number (1e-4), or gold number in it
``compare_python_pure_text`` [general]  1 iff the files are equal once all whitespace is removed
``check_python_file_by_test_suite``     1 iff the gold test suite's ``test()`` returns true (in a subprocess)
``compare_references`` [docs]           fuzzy match of the docx paragraphs after "References", rescaled
``compare_conference_city_in_order``    1 iff C2:C22 of the xlsx contain the expected cities in order
``fuzzy_place_math`` [general]          mean best fuzzy ratio of the docx's 3 words against the answers
``file_contains`` [general]             1 iff every ``rules["expected"]`` string is in the file
``check_line_number`` [general]         1 iff the number of lines holding a ``HH:MM:SS`` time is expected
``is_in_vm_clickboard`` [basic_os]      1 iff the expected string(s) are in the clipboard command's output
``compare_time_in_speedtest_results``   1 iff the export's first row time is within N minutes of now
======================================  =======================================================================

Getters: ``content_from_vm_file`` (an xlsx's last row as strings, as pandas reads it), ``vm_command_error``
(the stderr of a desktop command), ``time_diff_range`` (the task's ``diff_range_in_minutes``).

Not ported: ``compare_image_text`` (it OCRs an image with easyocr, a heavy model this package does not ship).

Fuzzy ratios are rapidfuzz's ``fuzz.ratio / 100`` (Indel similarity, :func:`fuzz_ratio`), computed
exactly; ``difflib`` is used where OSWorld itself uses it.

>>> "compare_pdfs" in METRICS and "time_diff_range" in GETTERS
True
"""

from __future__ import annotations

import datetime
import difflib
import io
import logging
import operator
import os
import re
import secrets
import signal
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from agentrl.core.errors import DependencyNotInstalled
from agentrl.envs.osworld.runtime import programs

__all__ = [
    "GETTERS",
    "METRICS",
    "check_line_number",
    "check_pdf_pages",
    "check_python_file_by_test_suite",
    "compare_archive",
    "compare_conference_city_in_order",
    "compare_csv",
    "compare_epub",
    "compare_htmls",
    "compare_pdf_images",
    "compare_pdfs",
    "compare_python_pure_text",
    "compare_references",
    "compare_result_files",
    "compare_time_in_speedtest_results",
    "compare_zip_files",
    "diff_text_file",
    "file_contains",
    "fuzz_ratio",
    "fuzzy_place_math",
    "get_content_from_vm_file",
    "get_time_diff_range",
    "get_vm_command_error",
    "is_in_vm_clickboard",
    "xlsx_last_row",
]

LOG = logging.getLogger("agentrl.osworld.evaluators.multi_apps")


INSTALL = "pip install 'agentrl-gym[osworld-office]'"


TEST_SUITE_TIMEOUT_S = 120.0
"""Default wall-clock limit of :func:`check_python_file_by_test_suite`'s subprocess (option ``timeout_s``)."""


def fuzz_ratio(a: str, b: str) -> float:
    """Rapidfuzz-compatible ``fuzz.ratio(a, b) / 100``: ``2 * LCS / (len(a) + len(b))``, 1.0 for two empty strings.

    The longest common subsequence is computed exactly with the bit-parallel algorithm (Hyyrö 2004) on
    Python integers, so whole PDF texts (tens of thousands of characters) take well under a second.

    >>> fuzz_ratio("hello", "help")
    0.6666666666666666
    >>> fuzz_ratio("", ""), fuzz_ratio("abc", "")
    (1.0, 0.0)
    """
    total = len(a) + len(b)
    if total == 0:
        return 1.0
    if not a or not b:
        return 0.0
    if len(a) < len(b):  # the bit vector spans the shorter string
        a, b = b, a
    masks: dict[str, int] = {}
    for i, char in enumerate(b):
        masks[char] = masks.get(char, 0) | (1 << i)
    full = (1 << len(b)) - 1
    row = full
    for char in a:
        match = masks.get(char, 0)
        if match:
            low = row & match
            row = ((row + low) | (row - low)) & full
    lcs = len(b) - row.bit_count()
    return 2.0 * lcs / total


def _path(value: Any) -> str | None:
    """``value`` as a local path string, or ``None`` for no path (``None``, ``""``, a non-path)."""
    if isinstance(value, (str, os.PathLike)) and str(value):
        return str(value)
    return None


def _read_text(path: str) -> str:
    # OSWorld reads with the locale's encoding (UTF-8 on its hosts); undecodable bytes must not crash a score.
    return Path(path).read_text(encoding="utf-8", errors="replace")


def _pypdf() -> Any:
    try:
        import pypdf
    except ImportError as error:
        raise DependencyNotInstalled("pypdf", command=INSTALL) from error
    return pypdf


def _pdf_page_texts(source: Any) -> list[str]:
    """The extracted text of each page of a PDF (a path or a binary file object)."""
    reader = _pypdf().PdfReader(source)
    return [page.extract_text() or "" for page in reader.pages]


def compare_pdfs(pdf1_path: Any, pdf2_path: Any, **options: Any) -> float:
    """Mean, over the file pairs, of the fuzzy ratio of the two PDFs' whole texts (OSWorld's ``compare_pdfs``).

    Either argument may be one path or a list of paths (OSWorld's multi-file getters); pairs are zipped
    and the sum is divided by the number of *expected* files, so a missing or unreadable file (``None``
    in a list) adds 0 for its pair. A page's text comes from pypdf (OSWorld: PyMuPDF), pages joined by
    a newline, then stripped; both sides go through the same extraction.

    Scores 1 when every pair has the same text.

    >>> compare_pdfs(None, "gold.pdf"), compare_pdfs(["result.pdf"], [])
    (0.0, 0.0)
    """
    if pdf1_path is None or pdf2_path is None:
        return 0.0
    results = pdf1_path if isinstance(pdf1_path, list) else [pdf1_path]
    expecteds = pdf2_path if isinstance(pdf2_path, list) else [pdf2_path]
    if not expecteds:
        return 0.0
    score = 0.0
    for path1, path2 in zip(results, expecteds, strict=False):
        try:
            text1 = "\n".join(_pdf_page_texts(path1)).strip()
            text2 = "\n".join(_pdf_page_texts(path2)).strip()
        except DependencyNotInstalled:
            raise
        except Exception as error:  # OSWorld logs and scores the pair 0
            LOG.info("compare_pdfs: cannot read %s / %s: %s", path1, path2, error)
            continue
        score += fuzz_ratio(text1, text2)
    return score / len(expecteds)


def _page_signature(page: Any) -> tuple[Any, ...]:
    box = page.mediabox
    images = []
    for image_file in page.images:
        image = image_file.image  # decoded by pypdf with Pillow
        images.append((image.mode, image.size, image.tobytes()))
    return (round(float(box.width), 1), round(float(box.height), 1), (page.extract_text() or "").strip(), images)


def compare_pdf_images(pdf1_path: Any, pdf2_path: Any, **kwargs: Any) -> float:
    """1 iff the two PDFs have the same pages.

    OSWorld rasterises every page with PyMuPDF and requires byte-identical pixmaps. Without a PDF renderer
    this compares what a page draws as pypdf sees it: the same number of pages and, page by page, the same
    media box size, the same text and the same embedded images (decoded pixels, in order). A PDF made
    from the same picture at the same page size scores 1; a different picture, crop or page size scores 0.

    >>> compare_pdf_images(None, "gold.pdf"), compare_pdf_images("result.pdf", "")
    (0.0, 0.0)
    """
    path1, path2 = _path(pdf1_path), _path(pdf2_path)
    if path1 is None or path2 is None:
        return 0.0
    pypdf = _pypdf()
    try:
        pages1 = [_page_signature(page) for page in pypdf.PdfReader(path1).pages]
    except Exception as error:
        LOG.info("compare_pdf_images: cannot read %s: %s", path1, error)
        return 0.0
    pages2 = [_page_signature(page) for page in pypdf.PdfReader(path2).pages]
    return float(pages1 == pages2)


_RELATIONS = {"lt", "le", "eq", "ne", "ge", "gt"}


def check_pdf_pages(pdf_file: Any, rules: Mapping[str, Any], **options: Any) -> float:
    """1 iff ``operator.<rules["relation"]>(number of pages, rules["ref_value"])`` holds.

    ``relation`` is one of ``lt le eq ne ge gt``; an unreadable PDF scores 0.

    >>> check_pdf_pages(None, {"relation": "eq", "ref_value": 1})
    0.0
    """
    path = _path(pdf_file)
    if path is None:
        return 0.0
    relation = str(rules["relation"])
    if relation not in _RELATIONS:
        raise ValueError(f"check_pdf_pages: relation {relation!r} is not one of {sorted(_RELATIONS)}")
    try:
        pages = len(_pypdf().PdfReader(path).pages)
    except DependencyNotInstalled:
        raise
    except Exception as error:
        LOG.info("check_pdf_pages: cannot read %s: %s", path, error)
        return 0.0
    return float(bool(getattr(operator, relation)(pages, rules["ref_value"])))


def compare_csv(result: Any, expected: Any, **options: Any) -> float:
    r"""1 iff the two files have the same lines (OSWorld's ``compare_csv``: text, not parsed cells).

    Options: ``strict`` (default true; false strips each line), ``ignore_case`` (default false).

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp(); a, b = os.path.join(d, "a.csv"), os.path.join(d, "b.csv")
    >>> _ = open(a, "w").write("x,y\n1,2\n"); _ = open(b, "w").write("X,Y \n1,2")
    >>> compare_csv(a, b), compare_csv(a, b, strict=False, ignore_case=True)
    (0.0, 1.0)
    """
    path1, path2 = _path(result), _path(expected)
    if path1 is None or path2 is None:
        return 0.0
    lines1: Iterable[str] = _read_text(path1).splitlines()
    lines2: Iterable[str] = _read_text(path2).splitlines()
    if not options.get("strict", True):
        lines1, lines2 = map(str.strip, lines1), map(str.strip, lines2)
    if options.get("ignore_case", False):
        lines1, lines2 = map(str.lower, lines1), map(str.lower, lines2)
    return float(list(lines1) == list(lines2))


def _lines_ratio(lines1: list[str], lines2: list[str]) -> float:
    return difflib.SequenceMatcher(a=lines1, b=lines2).ratio()


def diff_text_file(result: Any, expect: Any, **options: Any) -> float:
    r"""``difflib.SequenceMatcher`` ratio of the two files' line lists (1 for identical lines).

    A partial edit scores in between: 1 of 2 lines changed gives 0.5.

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp(); a, b = os.path.join(d, "a.txt"), os.path.join(d, "b.txt")
    >>> _ = open(a, "w").write("x\ny\n"); _ = open(b, "w").write("x\nz\n")
    >>> diff_text_file(a, a), diff_text_file(a, b), diff_text_file(None, b)
    (1.0, 0.5, 0.0)
    """
    path1, path2 = _path(result), _path(expect)
    if path1 is None or path2 is None:
        return 0.0
    return _lines_ratio(_read_text(path1).splitlines(), _read_text(path2).splitlines())


def compare_result_files(src_path: Any, tgt_path: Any, **options: Any) -> float:
    r"""1 iff the result file says the gold answer (OSWorld's ``compare_result_files``).

    With both contents stripped: when the gold is a number, 1 if the gold text occurs in the result
    (a sentence around the number is fine) or the result is a number within 1e-4 of it; otherwise 1 iff
    the texts are equal.

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp(); res, gold = os.path.join(d, "res.txt"), os.path.join(d, "gold.txt")
    >>> _ = open(res, "w").write("The answer is 42.\n"); _ = open(gold, "w").write("42")
    >>> compare_result_files(res, gold), compare_result_files(gold, res), compare_result_files(None, gold)
    (1.0, 0.0, 0.0)
    """
    path1, path2 = _path(src_path), _path(tgt_path)
    if path1 is None or path2 is None:
        return 0.0
    src, tgt = _read_text(path1).strip(), _read_text(path2).strip()
    try:
        gold = float(tgt)
    except ValueError:
        return float(src == tgt)
    if tgt in src:
        return 1.0
    try:
        return float(abs(float(src) - gold) < 1e-4)
    except ValueError:
        # OSWorld's except branch: a non-numeric result still scores 1 when the texts are equal
        return float(src == tgt)


def compare_python_pure_text(py_file_path: Any, gold_file_path: Any, **options: Any) -> float:
    r"""1 iff the two files are equal once every whitespace character is removed.

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp(); a, b = os.path.join(d, "a.py"), os.path.join(d, "b.py")
    >>> _ = open(a, "w").write("x = f(1, 2)\n"); _ = open(b, "w").write("x=f(1,2)")
    >>> compare_python_pure_text(a, b), compare_python_pure_text(a, None)
    (1.0, 0.0)
    """
    path1, path2 = _path(py_file_path), _path(gold_file_path)
    if path1 is None or path2 is None:
        return 0.0
    return float("".join(_read_text(path1).split()) == "".join(_read_text(path2).split()))


def file_contains(file_path: Any, config: Mapping[str, Any], **options: Any) -> float:
    """1 iff every string of ``config["expected"]`` occurs in the file's text.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "notes.txt"); _ = open(path, "w").write("hello world")
    >>> file_contains(path, {"expected": ["hello", "world"]}), file_contains(path, {"expected": ["bye"]})
    (1.0, 0.0)
    >>> file_contains(path + ".missing", {"expected": []})
    0.0
    """
    path = _path(file_path)
    if path is None or not os.path.isfile(path):
        return 0.0
    text = _read_text(path)
    return float(all(str(item) in text for item in config["expected"]))


_TIME = re.compile(r"([01]\d|2[0-3]):[0-5]\d:[0-5]\d")


def check_line_number(file_path: Any, line_number: Mapping[str, Any], **options: Any) -> float:
    r"""1 iff the number of lines holding an ``HH:MM:SS`` time equals ``int(line_number["expected"])``.

    (OSWorld's check of a ``sar 1 30`` report: a header line plus one line per sample.)

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "sar.txt")
    >>> _ = open(path, "w").write("12:00:01 CPU\n12:00:02 all 1.0\nAverage: all 1.0\n")
    >>> check_line_number(path, {"expected": "2"}), check_line_number(path, {"expected": 3})
    (1.0, 0.0)
    """
    path = _path(file_path)
    if path is None or not os.path.isfile(path):
        return 0.0
    count = sum(1 for line in _read_text(path).splitlines() if _TIME.search(line))
    try:
        return float(count == int(line_number["expected"]))
    except (TypeError, ValueError):
        return 0.0


def is_in_vm_clickboard(config: Mapping[str, Any], terminal_output: Any, **options: Any) -> float:
    r"""1 iff ``config["expected"]`` (a string, or every string of a list) occurs in the clipboard's text.

    OSWorld's argument order: the task's ``result`` is the ``rule`` and its ``expected`` is the
    ``xsel --clipboard --output`` command line.

    >>> is_in_vm_clickboard({"expected": ["None"]}, "None\n"), is_in_vm_clickboard({"expected": "a/b"}, "c")
    (1.0, 0.0)
    """
    if terminal_output is None:
        return 0.0
    text = str(terminal_output)
    expected = config["expected"]
    if isinstance(expected, list):
        return float(all(str(item) in text for item in expected))
    return float(str(expected) in text)


def compare_time_in_speedtest_results(speedtest_result_path: Any, time_diff: Any, **options: Any) -> float:
    """1 iff the speedtest.net export's first result was taken less than ``time_diff`` minutes from now.

    As OSWorld: the second field of the file's second line ends in ``HH:MM``, compared with the local
    clock's ``HH:MM`` (no wrap at midnight); anything unreadable scores 0.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "speedtest.csv"); _ = open(path, "w").write("Date,Time")
    >>> compare_time_in_speedtest_results(path, 60), compare_time_in_speedtest_results(None, 60)
    (0.0, 0.0)
    """
    path = _path(speedtest_result_path)
    if path is None or time_diff is None:
        return 0.0
    try:
        lines = _read_text(path).splitlines()
        stamp = lines[1].split(",")[1][-5:]
        taken = datetime.datetime.strptime(stamp, "%H:%M")
        now = datetime.datetime.strptime(datetime.datetime.now().strftime("%H:%M"), "%H:%M")
        return float(abs((taken - now).total_seconds()) / 60 < int(time_diff))
    except (IndexError, ValueError, OSError) as error:
        LOG.info("compare_time_in_speedtest_results: %s", error)
        return 0.0


def _unpack(archive: str, dest: Path) -> None:
    """Extract a zip or tar archive (detected by content) into ``dest``, never writing outside it."""
    dest.mkdir(parents=True, exist_ok=True)
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zipped:
            zipped.extractall(dest)  # zipfile drops absolute and ".." parts of member names
        return
    if tarfile.is_tarfile(archive):
        with tarfile.open(archive) as tarred:
            if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4 / 3.12: refuses links and paths out of dest
                tarred.extractall(dest, filter="data")
                return
            root = dest.resolve()
            members = []
            for member in tarred.getmembers():
                target = (dest / member.name).resolve()
                if (member.isfile() or member.isdir()) and (target == root or root in target.parents):
                    members.append(member)
            tarred.extractall(dest, members=members)
        return
    raise ValueError(f"{archive} is neither a zip nor a tar archive")


_ARCHIVE_METRICS = {
    "text": "compare_text_file",
    "pdf": "compare_pdfs",
    "docx": "compare_docx_files",
    "ppt": "compare_pptx_files",
    "image": "compare_images",
    "csv": "compare_csv",
    "table": "compare_table",
    "audio": "compare_audios",
    "video": "compare_videos",
}


def _archive_metric(file_type: str, metrics: Mapping[str, Callable[..., float]] | None) -> Callable[..., float]:
    name = _ARCHIVE_METRICS.get(file_type)
    if name is None:
        raise ValueError(f"compare_archive: file_type {file_type!r} is not one of {sorted(_ARCHIVE_METRICS)}")
    table = METRICS if metrics is None else metrics
    metric = table.get(name)
    if metric is None:
        raise ValueError(
            f"compare_archive: file_type {file_type!r} needs metric {name!r}, which is not in the table given; "
            "pass metrics=agentrl.envs.osworld.evaluators.METRICS (where every ported metric is)"
        )
    return metric


def compare_archive(
    pred_path: Any, gold_path: Any, *, metrics: Mapping[str, Callable[..., float]] | None = None, **kwargs: Any
) -> float:
    """Compare two archives (zip or tar) member by member (OSWorld's ``compare_archive``).

    Options: ``file_path`` (the folder inside the archives to compare, default the top), ``file_type``
    (``text`` default, ``pdf``, ``docx``, ``ppt``, ``image``, ``csv``, ``table``, ``audio``, ``video``:
    the metric each member pair goes through); other options go to that metric. 0 unless both folders
    list the same names; then the mean of the member scores. Departure: archives with nothing to compare
    score 0 (OSWorld divides by zero).

    ``metrics`` is the table the member metric is looked up in: :data:`agentrl.envs.osworld.evaluators.METRICS`
    hands itself here (so ``evaluate()`` reaches every ported metric, ``compare_text_file`` the default);
    called directly, without it, only this module's metrics (``pdf``, ``csv``) are reached.

    >>> import tempfile, os, zipfile
    >>> d = tempfile.mkdtemp(); a, b = os.path.join(d, "a.zip"), os.path.join(d, "b.zip")
    >>> for path in (a, b):
    ...     with zipfile.ZipFile(path, "w") as z: z.writestr("notes.txt", "same text")
    >>> from agentrl.envs.osworld.evaluators import METRICS
    >>> archive = METRICS["compare_archive"]  # this function, with the whole table handed in
    >>> archive(a, b), archive(os.path.join(d, "missing.zip"), b), archive(None, b)
    (1.0, 0.0, 0.0)
    """
    file_path = str(kwargs.pop("file_path", "") or "")
    compare = _archive_metric(str(kwargs.pop("file_type", "text")), metrics)
    pred, gold = _path(pred_path), _path(gold_path)
    if pred is None or gold is None:
        return 0.0
    with tempfile.TemporaryDirectory(prefix="agentrl-archive-") as tmp:
        pred_dir, gold_dir = Path(tmp, "pred"), Path(tmp, "gold")
        try:
            _unpack(pred, pred_dir)
        except (ValueError, OSError, zipfile.BadZipFile, tarfile.TarError) as error:
            LOG.info("compare_archive: cannot unpack %s: %s", pred, error)
            return 0.0
        _unpack(gold, gold_dir)
        pred_root, gold_root = pred_dir / file_path, gold_dir / file_path
        if not pred_root.is_dir():
            return 0.0
        pred_files, gold_files = sorted(os.listdir(pred_root)), sorted(os.listdir(gold_root))
        if pred_files != gold_files or not pred_files:
            return 0.0
        total = sum(float(compare(str(pred_root / name), str(gold_root / name), **kwargs)) for name in pred_files)
    return total / len(pred_files)


def compare_zip_files(actual: Any, expected: Any, **options: Any) -> float:
    """1 iff the two zips hold the same member names and the same contents.

    A ``.pdf`` member matches when its extracted text is at least 95% similar (``difflib`` ratio, as
    OSWorld); any other member must be byte-identical.

    >>> import tempfile, os, zipfile
    >>> d = tempfile.mkdtemp(); a, b, c = (os.path.join(d, n) for n in ("a.zip", "b.zip", "c.zip"))
    >>> for path, text in ((a, "one"), (b, "one"), (c, "two")):
    ...     with zipfile.ZipFile(path, "w") as z: z.writestr("m.txt", text)
    >>> compare_zip_files(a, b), compare_zip_files(a, c), compare_zip_files(None, b)
    (1.0, 0.0, 0.0)
    """
    path1, path2 = _path(actual), _path(expected)
    if path1 is None or path2 is None:
        return 0.0
    try:
        zip1 = zipfile.ZipFile(path1)
    except (zipfile.BadZipFile, OSError) as error:
        LOG.info("compare_zip_files: %s is not a zip: %s", path1, error)
        return 0.0
    with zip1, zipfile.ZipFile(path2) as zip2:
        names = set(zip1.namelist())
        if names != set(zip2.namelist()):
            return 0.0
        for name in names:
            content1, content2 = zip1.read(name), zip2.read(name)
            if name.lower().endswith(".pdf"):
                try:
                    text1 = "".join(_pdf_page_texts(io.BytesIO(content1)))
                except Exception as error:
                    LOG.info("compare_zip_files: %s in %s is not a PDF: %s", name, path1, error)
                    return 0.0
                text2 = "".join(_pdf_page_texts(io.BytesIO(content2)))
                if difflib.SequenceMatcher(None, text1, text2).ratio() < 0.95:
                    return 0.0
            elif content1 != content2:
                return 0.0
    return 1.0


def compare_htmls(html_path1: Any, html_path2: Any, **options: Any) -> float:
    """1 iff the two HTML files' nodes agree pairwise in document order (BeautifulSoup with lxml).

    Tags must have the same name, attributes and stripped text; text nodes must be equal. As in OSWorld
    the walk stops at the shorter document.

    >>> compare_htmls(None, "gold.html"), compare_htmls("result.html", "")
    (0.0, 0.0)
    """
    path1, path2 = _path(html_path1), _path(html_path2)
    if path1 is None or path2 is None:
        return 0.0
    try:
        from bs4 import BeautifulSoup, Tag
    except ImportError as error:
        raise DependencyNotInstalled("beautifulsoup4", command=INSTALL) from error
    soup1 = BeautifulSoup(_read_text(path1), "lxml")
    soup2 = BeautifulSoup(_read_text(path2), "lxml")

    def same(node1: Any, node2: Any) -> bool:
        if not (isinstance(node1, Tag) and isinstance(node2, Tag)):
            return bool(node1 == node2)
        return node1.name == node2.name and node1.text.strip() == node2.text.strip() and node1.attrs == node2.attrs

    return float(all(same(n1, n2) for n1, n2 in zip(soup1.descendants, soup2.descendants, strict=False)))


def _epub_parts(path: str) -> list[tuple[str, list[str]]] | None:
    """OSWorld's ``process_epub``: the ``(name, lines)`` of an EPUB's parts, sorted by name.

    The parts: ``toc.ncx`` without ``navPoint`` lines, ``content.opf`` without ``dc:identifier`` lines and
    every ``*.html`` member re-serialised by lxml; ``None`` when the file is not a zip
    or lacks ``toc.ncx``/``content.opf``.
    """
    import lxml.html

    try:
        with zipfile.ZipFile(path) as book:
            names = set(book.namelist())
            if "toc.ncx" not in names or "content.opf" not in names:
                return None
            parts = [
                ("toc.ncx", [line for line in book.read("toc.ncx").decode().splitlines() if "navPoint" not in line]),
                (
                    "content.opf",
                    [line for line in book.read("content.opf").decode().splitlines() if "dc:identifier" not in line],
                ),
            ]
            for name in book.namelist():
                if name.endswith(".html"):
                    raw = book.read(name).decode().replace("\n", "").replace("\r", "")
                    tree = lxml.html.fromstring(raw.encode())
                    parts.append((name, lxml.html.tostring(tree, pretty_print=True, encoding="unicode").splitlines()))
    except (zipfile.BadZipFile, OSError, UnicodeDecodeError) as error:
        LOG.info("compare_epub: cannot read %s: %s", path, error)
        return None
    return sorted(parts)


def compare_epub(result: Any, expected: Any, **options: Any) -> float:
    """Product of :func:`diff_text_file` ratios over the two EPUBs' ``toc.ncx``, ``content.opf`` and ``.html``.

    The member lists are sorted and zipped as OSWorld does (the book identifier and the navigation
    points are dropped first, so a rebuilt book of the same text scores 1). Departure: a result that is
    not a zip or lacks ``toc.ncx``/``content.opf`` scores 0 (OSWorld scores a broken zip 1 and crashes
    on a missing member).

    >>> compare_epub(None, "gold.epub"), compare_epub("result.epub", "")
    (0.0, 0.0)
    """
    path1, path2 = _path(result), _path(expected)
    if path1 is None or path2 is None:
        return 0.0
    parts1 = _epub_parts(path1)
    if parts1 is None:
        return 0.0
    parts2 = _epub_parts(path2)
    if parts2 is None:
        raise ValueError(f"compare_epub: the expected book {path2} is not an EPUB with toc.ncx and content.opf")
    score = 1.0
    for (_, lines1), (_, lines2) in zip(parts1, parts2, strict=False):
        score *= _lines_ratio(lines1, lines2)
    return score


def check_python_file_by_test_suite(actual_files: Any, test_file: Any, **options: Any) -> float:
    """1 iff the gold test suite's test function (option ``test_function_name``, default ``test``) returns true.

    OSWorld imports the test file into the evaluating process and calls the function. Here it runs in a
    fresh ``python`` subprocess instead, with a timeout (option ``timeout_s``, default 120): the suite
    imports the agent's code (the snake/tetris game files fetched next to it), which can loop forever,
    open windows, call ``sys.exit``, or patch modules; in our process any of these would hang or
    corrupt the trainer, while a child is simply killed (its whole process group) and scores 0. The child
    runs in the test file's folder with that folder and the result files' folders first on ``sys.path``,
    and with SDL's dummy video/audio drivers so a pygame game never opens a window on the host. An
    import error, an exception in the test, a crash or a timeout scores 0.

    A missing test file scores 0 without starting a child:

    >>> check_python_file_by_test_suite(["snake.py"], None), check_python_file_by_test_suite([], "/no/such/test.py")
    (0.0, 0.0)
    """
    test_path = _path(test_file)
    if test_path is None or not os.path.isfile(test_path):
        return 0.0
    name = str(options.get("test_function_name", "test"))
    timeout_s = float(options.get("timeout_s", TEST_SUITE_TIMEOUT_S))
    files = actual_files if isinstance(actual_files, list) else [actual_files]
    folders = [str(Path(test_path).resolve().parent)]
    for file in files:
        local = _path(file)
        if local is not None:
            folder = str(Path(local).resolve().parent)
            if folder not in folders:
                folders.append(folder)
    marker = "agentrl-test-suite-" + secrets.token_hex(8) + ":"
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", SDL_VIDEODRIVER="dummy", SDL_AUDIODRIVER="dummy")
    argv = [sys.executable, "-c", programs.source("suite_runner"), test_path, name, marker, *folders]
    child = subprocess.Popen(
        argv,
        cwd=folders[0],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, so a timeout kills whatever the game spawned too
    )
    try:
        out, err = child.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(child)
        child.communicate()
        LOG.info("check_python_file_by_test_suite: %s timed out after %.0f s", test_path, timeout_s)
        return 0.0
    finally:
        if child.poll() is None:
            _kill_group(child)
    lines = out.decode(errors="replace").splitlines()
    verdicts = [line[len(marker) :] for line in lines if line.startswith(marker)]
    if not verdicts:
        LOG.info("check_python_file_by_test_suite: no verdict (rc %s): %s", child.returncode, err[-2000:])
        return 0.0
    return float(verdicts[-1] == "1")


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        child.kill()


def _docx_paragraphs(path: str) -> list[str] | None:
    try:
        import docx
    except ImportError as error:
        raise DependencyNotInstalled("python-docx", command=INSTALL) from error
    try:
        return [paragraph.text for paragraph in docx.Document(path).paragraphs]
    except Exception as error:
        LOG.info("cannot read %s as docx: %s", path, error)
        return None


def compare_references(file1: Any, file2: Any, **options: Any) -> float:
    """Similarity of the reference lists that follow the ``"References"`` paragraph of two docx files.

    Options: ``reference_indicator`` (the heading paragraph, default ``"References"``),
    ``reference_base_result`` (default 0.5). The non-empty paragraphs after the first heading paragraph
    are paired; different counts score 0; otherwise the mean fuzzy ratio ``r`` gives
    ``(r - base) / (1 - base)`` when ``r >= base``, else 0. Neither file having the heading scores 1,
    only one having it 0. Departure: two empty reference lists score 1 (OSWorld divides by zero).

    Anything but two ``.docx`` paths scores 0:

    >>> compare_references(None, "gold.docx"), compare_references("result.txt", "gold.docx")
    (0.0, 0.0)
    """
    path1, path2 = _path(file1), _path(file2)
    if path1 is None or path2 is None or not (path1.endswith(".docx") and path2.endswith(".docx")):
        return 0.0
    indicator = options.get("reference_indicator", "References")
    base = float(options.get("reference_base_result", 0.5))
    paragraphs1, paragraphs2 = _docx_paragraphs(path1), _docx_paragraphs(path2)
    if paragraphs1 is None or paragraphs2 is None:
        return 0.0
    index1 = paragraphs1.index(indicator) if indicator in paragraphs1 else -1
    index2 = paragraphs2.index(indicator) if indicator in paragraphs2 else -1
    if index1 == -1 and index2 == -1:
        return 1.0
    if index1 == -1 or index2 == -1:
        return 0.0
    refs1 = [p for p in paragraphs1[index1 + 1 :] if p.strip()]
    refs2 = [p for p in paragraphs2[index2 + 1 :] if p.strip()]
    if len(refs1) != len(refs2):
        return 0.0
    if not refs1:
        return 1.0
    mean = sum(fuzz_ratio(r1, r2) for r1, r2 in zip(refs1, refs2, strict=True)) / len(refs1)
    if mean < base:
        return 0.0
    return (mean - base) / (1 - base) if base < 1 else 1.0


def fuzzy_place_math(result_file_path: Any, rules: Mapping[str, Any], **options: Any) -> float:
    """Mean over the docx's words of their best fuzzy ratio against ``rules["expected"]``; 0 unless 3 words.

    (OSWorld's check that a Writer document lists exactly three addresses, each close to an answer.)

    >>> fuzzy_place_math(None, {"expected": ["a", "b", "c"]})
    0.0
    """
    path = _path(result_file_path)
    if path is None:
        return 0.0
    paragraphs = _docx_paragraphs(path)
    if paragraphs is None:
        return 0.0
    words = [word for text in paragraphs for word in text.split()]
    if len(words) != 3:
        return 0.0
    answers = [str(answer) for answer in rules["expected"]]
    return sum(max((fuzz_ratio(word, answer) for answer in answers), default=0.0) for word in words) / 3


def _openpyxl() -> Any:
    try:
        import openpyxl
    except ImportError as error:
        raise DependencyNotInstalled("openpyxl", command=INSTALL) from error
    return openpyxl


def compare_conference_city_in_order(
    actual_city_list_path: Any, expected_city: Mapping[str, Any], **options: Any
) -> float:
    """1 iff cells C2:C22 of the workbook's active sheet contain the expected cities, in order.

    ``expected_city["expected"][i]`` is a city (a substring of cell ``C{i+2}``) or a list of
    alternatives (any one of them). An empty cell, a short expected list or an unreadable file scores 0.

    >>> compare_conference_city_in_order(None, {"expected": ["Vienna"]})
    0.0
    """
    path = _path(actual_city_list_path)
    if path is None:
        return 0.0
    expected = expected_city["expected"]
    try:
        sheet = _openpyxl().load_workbook(path).active
        actual = [cell.value for row in sheet["C2:C22"] for cell in row]
        for index, value in enumerate(actual):
            want = expected[index]
            if isinstance(want, str):
                ok = want in value
            elif isinstance(want, list):
                ok = any(option in value for option in want)
            else:
                return 0.0
            if not ok:
                return 0.0
    except DependencyNotInstalled:
        raise
    except Exception as error:  # OSWorld: any error scores 0 (an empty cell, a short list...)
        LOG.info("compare_conference_city_in_order: %s", error)
        return 0.0
    return 1.0


def _pandas_strings(column: list[Any]) -> list[str]:
    """A column's cells as ``pandas.read_excel(...).astype(str)`` writes them (pandas' dtype inference)."""
    present = [value for value in column if value is not None]
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present)
    if present and numbers and len(present) == len(column) and all(isinstance(v, int) for v in present):
        return [str(v) for v in column]  # int64
    if numbers:  # float64 (an empty cell is NaN, which also makes an int column float)
        return ["nan" if v is None else str(float(v)) for v in column]
    if all(isinstance(v, datetime.datetime) for v in present):
        return ["NaT" if v is None else str(v) for v in column]  # datetime64
    return ["nan" if v is None else str(v) for v in column]  # object


def xlsx_last_row(path: str) -> list[str] | None:
    """The last data row of an xlsx's first sheet as pandas' ``read_excel(path).iloc[-1].astype(str)`` gives it.

    The first row is the header; trailing empty rows are dropped; ``None`` when there is no data row.
    """
    openpyxl = _openpyxl()
    book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    try:
        rows = [list(row) for row in book.worksheets[0].iter_rows(values_only=True)]
    finally:
        book.close()
    while rows and all(value is None or value == "" for value in rows[-1]):
        rows.pop()
    if len(rows) < 2:
        return None
    width = max(len(row) for row in rows)
    data = [[_excel_value(v) for v in row] + [None] * (width - len(row)) for row in rows[1:]]
    columns = [_pandas_strings([row[j] for row in data]) for j in range(width)]
    return [column[-1] for column in columns]


def _excel_value(value: Any) -> Any:
    if value == "":
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)  # pandas' openpyxl reader turns integral floats into ints
    return value


def get_content_from_vm_file(client: Any, spec: Mapping[str, Any]) -> Any:
    """OSWorld's ``content_from_vm_file``: fetch ``spec["path"]`` and return a part of it.

    Only ``file_type: "xlsx"`` with ``file_content: "last_row"`` exists in OSWorld: the first sheet's
    last row as strings (:func:`xlsx_last_row`). ``None`` when the file is missing or has no data row.
    """
    path = str(spec["path"])
    file_type, content = spec.get("file_type"), spec.get("file_content")
    if file_type != "xlsx":
        raise ValueError(f"content_from_vm_file: file_type {file_type!r} is not supported (only 'xlsx')")
    local = client._vm_file(path, os.path.basename(path))
    if local is None or content != "last_row":
        return None
    return xlsx_last_row(local)


def get_vm_command_error(client: Any, spec: Mapping[str, Any]) -> Any:
    """OSWorld's ``vm_command_error``: the standard error of ``spec["command"]`` run on the desktop."""
    result = client.execute(spec["command"], shell=bool(spec.get("shell", False)))
    return result.get("error")


def get_time_diff_range(client: Any, spec: Mapping[str, Any]) -> Any:
    """OSWorld's ``time_diff_range``: the task's ``diff_range_in_minutes`` (``None`` when absent).

    >>> get_time_diff_range(None, {"type": "time_diff_range", "diff_range_in_minutes": "60"})
    '60'
    """
    return spec.get("diff_range_in_minutes")


GETTERS: dict[str, Callable[..., Any]] = {
    "content_from_vm_file": get_content_from_vm_file,
    "time_diff_range": get_time_diff_range,
    "vm_command_error": get_vm_command_error,
}
"""OSWorld getter type -> ``getter(client, spec)``."""


METRICS: dict[str, Callable[..., float]] = {
    "check_line_number": check_line_number,
    "check_pdf_pages": check_pdf_pages,
    "check_python_file_by_test_suite": check_python_file_by_test_suite,
    "compare_archive": compare_archive,
    "compare_conference_city_in_order": compare_conference_city_in_order,
    "compare_csv": compare_csv,
    "compare_epub": compare_epub,
    "compare_htmls": compare_htmls,
    "compare_pdf_images": compare_pdf_images,
    "compare_pdfs": compare_pdfs,
    "compare_python_pure_text": compare_python_pure_text,
    "compare_references": compare_references,
    "compare_result_files": compare_result_files,
    "compare_time_in_speedtest_results": compare_time_in_speedtest_results,
    "compare_zip_files": compare_zip_files,
    "diff_text_file": diff_text_file,
    "file_contains": file_contains,
    "fuzzy_place_math": fuzzy_place_math,
    "is_in_vm_clickboard": is_in_vm_clickboard,
}
"""OSWorld metric name -> ``metric(result, expected_or_rules, **options)``."""
