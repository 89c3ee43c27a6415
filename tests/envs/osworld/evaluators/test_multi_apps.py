"""OSWorld's multi-app file metrics and getters (evaluators.multi_apps) on real-format files.

PDFs are written by hand here (a minimal valid PDF with Helvetica text and an optional RGB image XObject,
read back with pypdf), archives with ``zipfile``/``tarfile``, an EPUB as calibre lays one out, docx with
python-docx and xlsx with openpyxl.
"""

from __future__ import annotations

import datetime
import io
import os
import random
import tarfile
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pypdf", reason="pypdf is the osworld-office extra (in dev)")
docx = pytest.importorskip("docx", reason="python-docx is the osworld-office extra (in dev)")
openpyxl = pytest.importorskip("openpyxl", reason="openpyxl is the osworld-office extra (in dev)")
pytest.importorskip("bs4", reason="beautifulsoup4 is the osworld-office extra (in dev)")

from agentrl.envs.osworld.evaluators import METRICS  # noqa: E402
from agentrl.envs.osworld.evaluators import multi_apps as mf  # noqa: E402
from agentrl.envs.osworld.tasks.evaluate import evaluate  # noqa: E402
from agentrl.envs.osworld.tasks.format import OSWorldTask, unsupported  # noqa: E402

# -- builders ------------------------------------------------------------------------------------------


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(
    path: Path,
    pages: list[str],
    *,
    image: tuple[int, int, bytes] | None = None,
    size: tuple[int, int] = (612, 792),
) -> str:
    """A valid PDF: one page per string (lines split on ``\\n``), optionally an RGB image on every page."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled in below
    pages_id = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    image_id = None
    if image is not None:
        width, height, pixels = image
        image_id = add(
            b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceRGB /BitsPerComponent 8"
            b" /Length %d >>\nstream\n" % (width, height, len(pixels)) + pixels + b"\nendstream"
        )
    kids = []
    for text in pages:
        ops = [f"BT /F1 12 Tf 72 {720 - 16 * i} Td ({_escape(line)}) Tj ET" for i, line in enumerate(text.split("\n"))]
        if image_id is not None:
            ops.append("q 100 0 0 100 72 400 cm /Im1 Do Q")
        stream = "\n".join(ops).encode("latin-1")
        contents = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        xobject = b" /XObject << /Im1 %d 0 R >>" % image_id if image_id is not None else b""
        kids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 %d %d] /Resources << /Font << /F1 %d 0 R >>%s >>"
                b" /Contents %d 0 R >>" % (pages_id, size[0], size[1], font, xobject, contents)
            )
        )
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id
    objects[pages_id - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % kid for kid in kids),
        len(kids),
    )
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, catalog, xref)
    path.write_bytes(bytes(out))
    return str(path)


def make_docx(path: Path, paragraphs: list[str]) -> str:
    document = docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    document.save(str(path))
    return str(path)


def write(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return str(path)


RED = (2, 2, bytes([255, 0, 0] * 4))
BLUE = (2, 2, bytes([0, 0, 255] * 4))


class FakeClient:
    """The part of ``DesktopClient`` the getters use, serving the desktop's ``/home/user`` from a tmp dir."""

    def __init__(self, home: Path, cache: Path) -> None:
        self.home, self.cache_dir = home, cache
        self.commands: list[tuple[Any, bool]] = []

    def read_file(self, path: str) -> bytes | None:
        local = self.home / Path(path).relative_to("/home/user")
        return local.read_bytes() if local.is_file() else None

    def _vm_file(self, path: str, dest: str | None) -> str | None:
        data = self.read_file(path)
        if data is None:
            return None
        local = self.cache_dir / Path(dest or Path(path).name).name
        local.write_bytes(data)
        return str(local)

    def execute(self, command: Any, shell: bool = False) -> dict[str, Any]:
        self.commands.append((command, shell))
        error = "" if "ok" in str(command) else "ModuleNotFoundError: No module named 'InstructorEmbedding'\nError:"
        return {"status": "success", "output": "", "error": error, "returncode": 0 if not error else 1}


# -- fuzzy ratio ---------------------------------------------------------------------------------------


def _lcs(a: str, b: str) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
    return table[-1][-1]


def test_fuzz_ratio_is_the_exact_indel_similarity() -> None:
    rng = random.Random(0)
    for _ in range(300):
        a = "".join(rng.choice("abcé ") for _ in range(rng.randint(0, 15)))
        b = "".join(rng.choice("abcd ") for _ in range(rng.randint(0, 15)))
        expected = 1.0 if not a and not b else 2 * _lcs(a, b) / (len(a) + len(b))
        assert mf.fuzz_ratio(a, b) == pytest.approx(expected)
    assert mf.fuzz_ratio("kitten", "sitting") == pytest.approx(2 * 4 / 13)


# -- PDFs ----------------------------------------------------------------------------------------------


def test_compare_pdfs_single_and_lists(tmp_path: Path) -> None:
    gold = make_pdf(tmp_path / "gold.pdf", ["Invoice 243729", "Total: 120 EUR"])
    same = make_pdf(tmp_path / "same.pdf", ["Invoice 243729", "Total: 120 EUR"], size=(595, 842))
    other = make_pdf(tmp_path / "other.pdf", ["Completely unrelated words"])
    assert mf.compare_pdfs(same, gold) == 1.0
    assert mf.compare_pdfs(other, gold) < 0.5
    assert mf.compare_pdfs(None, gold) == 0.0
    # OSWorld's multi-file shape: pairs zipped, divided by the number of expected files; None adds 0
    second = make_pdf(tmp_path / "second.pdf", ["Receipt 0123"])
    assert mf.compare_pdfs([gold, second], [same, second]) == 1.0
    assert mf.compare_pdfs([gold, second], [same, None]) == 0.5
    not_pdf = write(tmp_path / "x.pdf", "not a pdf")
    assert mf.compare_pdfs([not_pdf, second], [gold, second]) == 0.5


def test_compare_pdf_images_compares_page_images(tmp_path: Path) -> None:
    gold = make_pdf(tmp_path / "receipt_Gold.pdf", [""], image=RED)
    same = make_pdf(tmp_path / "receipt.pdf", [""], image=RED)
    blue = make_pdf(tmp_path / "blue.pdf", [""], image=BLUE)
    two_pages = make_pdf(tmp_path / "two.pdf", ["", ""], image=RED)
    a4 = make_pdf(tmp_path / "a4.pdf", [""], image=RED, size=(595, 842))
    assert mf.compare_pdf_images(same, gold) == 1.0
    assert mf.compare_pdf_images(blue, gold) == 0.0
    assert mf.compare_pdf_images(two_pages, gold) == 0.0
    assert mf.compare_pdf_images(a4, gold) == 0.0
    assert mf.compare_pdf_images(None, gold) == 0.0


def test_check_pdf_pages(tmp_path: Path) -> None:
    one = make_pdf(tmp_path / "one.pdf", ["a"])
    two = make_pdf(tmp_path / "two.pdf", ["a", "b"])
    rules = {"relation": "eq", "ref_value": 1}
    assert mf.check_pdf_pages(one, rules) == 1.0
    assert mf.check_pdf_pages(two, rules) == 0.0
    assert mf.check_pdf_pages(two, {"relation": "gt", "ref_value": 1}) == 1.0
    assert mf.check_pdf_pages(write(tmp_path / "bad.pdf", "junk"), rules) == 0.0
    with pytest.raises(ValueError, match="relation"):
        mf.check_pdf_pages(one, {"relation": "__class__", "ref_value": 1})


# -- text ----------------------------------------------------------------------------------------------


def test_compare_csv_options(tmp_path: Path) -> None:
    gold = write(tmp_path / "gold.csv", "Name,Email\nAda,ada@x.org\n")
    assert mf.compare_csv(write(tmp_path / "a.csv", "Name,Email\r\nAda,ada@x.org"), gold) == 1.0
    loose = write(tmp_path / "b.csv", "name,email \nADA,ada@x.org\n")
    assert mf.compare_csv(loose, gold) == 0.0
    assert mf.compare_csv(loose, gold, strict=False, ignore_case=True) == 1.0
    assert mf.compare_csv(None, gold) == 0.0


def test_diff_text_file_is_a_line_ratio(tmp_path: Path) -> None:
    gold = write(tmp_path / "real.tex", "\\section{A}\nline one\nline two\nline three\n")
    assert mf.diff_text_file(write(tmp_path / "same.tex", "\\section{A}\nline one\nline two\nline three"), gold) == 1
    half = write(tmp_path / "half.tex", "\\section{A}\nline one\nchanged\nchanged too\n")
    assert mf.diff_text_file(half, gold) == pytest.approx(0.5)
    assert mf.diff_text_file(None, gold) == 0.0


def test_compare_result_files_number_and_text(tmp_path: Path) -> None:
    gold = write(tmp_path / "result_gold.txt", "25.5\n")
    assert mf.compare_result_files(write(tmp_path / "a.txt", "The median price is 25.5"), gold) == 1.0
    assert mf.compare_result_files(write(tmp_path / "b.txt", "25.50001"), gold) == 1.0
    assert mf.compare_result_files(write(tmp_path / "c.txt", "26"), gold) == 0.0
    assert mf.compare_result_files(write(tmp_path / "d.txt", "unknown"), gold) == 0.0
    text_gold = write(tmp_path / "t_gold.txt", "hello")
    assert mf.compare_result_files(write(tmp_path / "e.txt", " hello \n"), text_gold) == 1.0
    assert mf.compare_result_files(write(tmp_path / "f.txt", "hello!"), text_gold) == 0.0


def test_compare_python_pure_text(tmp_path: Path) -> None:
    gold = write(tmp_path / "colab_Gold.py", "def f(x):\n    return x + 1\n")
    assert mf.compare_python_pure_text(write(tmp_path / "a.py", "def f(x):\n\treturn x+1"), gold) == 1.0
    assert mf.compare_python_pure_text(write(tmp_path / "b.py", "def f(x):\n    return x + 2\n"), gold) == 0.0
    assert mf.compare_python_pure_text(None, gold) == 0.0


SAR = """Linux 6.5.0-21-generic (user-VM) \t03/07/2024 \t_x86_64_\t(4 CPU)

03:15:01 PM     CPU     %user     %nice   %system   %iowait    %steal     %idle
{rows}
Average:        all      1.02      0.00      0.51      0.03      0.00     98.44
"""


def test_file_contains_and_check_line_number_on_a_sar_report(tmp_path: Path) -> None:
    rows = "\n".join(
        f"03:15:{i + 2:02d} PM     all      1.00      0.00      0.50      0.00      0.00     98.50" for i in range(30)
    )
    report = write(tmp_path / "System_Resources_Report.txt", SAR.format(rows=rows))
    wanted = {"expected": ["CPU", "%user", "%nice", "%system", "%iowait", "%steal", "%idle"]}
    assert mf.file_contains(report, wanted) == 1.0
    assert mf.file_contains(report, {"expected": ["%memused"]}) == 0.0
    assert mf.file_contains(None, wanted) == 0.0
    assert mf.check_line_number(report, {"expected": "31"}) == 1.0
    short = write(tmp_path / "short.txt", SAR.format(rows=rows.split("\n", 1)[1]))
    assert mf.check_line_number(short, {"expected": "31"}) == 0.0
    assert mf.check_line_number(str(tmp_path / "missing.txt"), {"expected": "31"}) == 0.0


def test_is_in_vm_clickboard_string_and_list() -> None:
    assert mf.is_in_vm_clickboard(
        {"expected": "/home/user/Data3/List3/secret.docx"}, "/home/user/Data3/List3/secret.docx"
    )
    assert mf.is_in_vm_clickboard({"expected": "/home/user/Data3/List3/secret.docx"}, "/home/user/Data3") == 0.0
    assert mf.is_in_vm_clickboard({"expected": ["None"]}, "None") == 1.0
    assert mf.is_in_vm_clickboard({"expected": ["None", "ICLR"]}, "None") == 0.0
    assert mf.is_in_vm_clickboard({"expected": ["None"]}, None) == 0.0


def test_compare_time_in_speedtest_results(tmp_path: Path) -> None:
    now = datetime.datetime.now()
    header = "ConnType,Date,Download,Upload,Latency,ServerName\n"
    fresh = write(tmp_path / "fresh.csv", header + f"WIFI,{now:%m/%d/%Y} {now:%H:%M},94.21,20.11,12,Tokyo\n")
    far = "23:59" if now.hour < 12 else "00:00"  # at least 12 hours away, whatever the clock says
    stale = write(tmp_path / "stale.csv", header + f"WIFI,{now:%m/%d/%Y} {far},94.21,20.11,12,Tokyo\n")
    assert mf.compare_time_in_speedtest_results(fresh, "60") == 1.0
    assert mf.compare_time_in_speedtest_results(stale, "60") == 0.0
    assert mf.compare_time_in_speedtest_results(write(tmp_path / "empty.csv", header), "60") == 0.0
    assert mf.compare_time_in_speedtest_results(None, "60") == 0.0


# -- archives ------------------------------------------------------------------------------------------


def _zip(path: Path, members: dict[str, bytes]) -> str:
    with zipfile.ZipFile(path, "w") as zipped:
        for name, data in members.items():
            zipped.writestr(name, data)
    return str(path)


def _pdf_bytes(tmp_path: Path, text: str, size: tuple[int, int] = (612, 792)) -> bytes:
    return Path(make_pdf(tmp_path / f"t{random.random()}.pdf", [text], size=size)).read_bytes()


def test_compare_archive_pdf_members_in_a_folder(tmp_path: Path) -> None:
    slides = {f"lecture_slides/{n}.pdf": _pdf_bytes(tmp_path, f"Lecture {n} content") for n in ("01", "02")}
    gold = _zip(tmp_path / "gold_lecture_slides.zip", slides)
    pred = _zip(tmp_path / "lecture_slides.zip", dict(slides))
    options = {"file_path": "lecture_slides", "file_type": "pdf"}
    assert mf.compare_archive(pred, gold, **options) == 1.0
    changed = dict(slides, **{"lecture_slides/02.pdf": _pdf_bytes(tmp_path, "zzzzzzzzzzzzzzzzz")})
    half = mf.compare_archive(_zip(tmp_path / "half.zip", changed), gold, **options)
    assert 0.5 <= half < 0.75
    renamed = {"lecture_slides/01.pdf": slides["lecture_slides/01.pdf"], "lecture_slides/3.pdf": b""}
    assert mf.compare_archive(_zip(tmp_path / "renamed.zip", renamed), gold, **options) == 0.0
    assert mf.compare_archive(write(tmp_path / "not.zip", "text"), gold, **options) == 0.0
    assert mf.compare_archive(None, gold, **options) == 0.0


def test_compare_archive_tar_gz_and_text_default(tmp_path: Path) -> None:
    def tar(path: Path, members: dict[str, bytes]) -> str:
        with tarfile.open(path, "w:gz") as tarred:
            for name, data in members.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tarred.addfile(info, io.BytesIO(data))
        return str(path)

    pdfs = {"a.pdf": _pdf_bytes(tmp_path, "Doc A"), "b.pdf": _pdf_bytes(tmp_path, "Doc B")}
    gold = tar(tmp_path / "pdf_gold.tar.gz", pdfs)
    assert mf.compare_archive(tar(tmp_path / "pdf.tar.gz", pdfs), gold, file_type="pdf") == 1.0
    texts = tar(tmp_path / "texts.tar.gz", {"a.txt": b"x\n"})
    archive = METRICS["compare_archive"]  # as evaluate() calls it: the whole metric table handed in
    assert archive(tar(tmp_path / "t2.tar.gz", {"a.txt": b"x\n"}), texts) == 1.0
    assert archive(tar(tmp_path / "t3.tar.gz", {"a.txt": b"y\n"}), texts) == 0.0
    with pytest.raises(ValueError, match="file_type"):
        archive(texts, texts, file_type="hologram")
    # Called directly, without the table, a member metric of another module is named with the fix.
    with pytest.raises(ValueError, match=r"pass metrics=agentrl\.envs\.osworld\.evaluators\.METRICS"):
        mf.compare_archive(texts, texts)


def test_compare_zip_files_pdf_text_and_bytes(tmp_path: Path) -> None:
    essay = _pdf_bytes(tmp_path, "Recruitment and retention of health professionals across Europe")
    gold = _zip(tmp_path / "gold.zip", {"essay.pdf": essay, "reminder.txt": b"submit by Friday"})
    # the same text in a differently laid out PDF still matches; other members must be byte-identical
    relaid = _pdf_bytes(tmp_path, "Recruitment and retention of health professionals across Europe", size=(595, 842))
    assert mf.compare_zip_files(
        _zip(tmp_path / "a.zip", {"essay.pdf": relaid, "reminder.txt": b"submit by Friday"}), gold
    )
    wrong_text = _zip(tmp_path / "b.zip", {"essay.pdf": essay, "reminder.txt": b"submit by Monday"})
    assert mf.compare_zip_files(wrong_text, gold) == 0.0
    other_pdf = _zip(
        tmp_path / "c.zip",
        {"essay.pdf": _pdf_bytes(tmp_path, "An essay about cats"), "reminder.txt": b"submit by Friday"},
    )
    assert mf.compare_zip_files(other_pdf, gold) == 0.0
    assert mf.compare_zip_files(_zip(tmp_path / "d.zip", {"essay.pdf": essay}), gold) == 0.0
    assert mf.compare_zip_files(write(tmp_path / "e.zip", "no"), gold) == 0.0


# -- HTML and EPUB -------------------------------------------------------------------------------------

HTML = """<!DOCTYPE html><html><head><title>Survey</title></head><body>
<table class="{cls}"><tr><th>Year</th><th>Value</th></tr><tr><td>2021</td><td>{value}</td></tr></table>
</body></html>"""


def test_compare_htmls(tmp_path: Path) -> None:
    gold = write(tmp_path / "gold.html", HTML.format(cls="data", value="757,504"))
    assert mf.compare_htmls(write(tmp_path / "a.html", HTML.format(cls="data", value="757,504")), gold) == 1.0
    assert mf.compare_htmls(write(tmp_path / "b.html", HTML.format(cls="grid", value="757,504")), gold) == 0.0
    assert mf.compare_htmls(write(tmp_path / "c.html", HTML.format(cls="data", value="1")), gold) == 0.0
    assert mf.compare_htmls(None, gold) == 0.0


OPF = """<?xml version="1.0" encoding="utf-8"?>
<package xmlns="http://www.idpf.org/2007/opf" unique-identifier="uuid_id" version="2.0">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:title>Pass Through</dc:title>
    <dc:identifier id="uuid_id">{uuid}</dc:identifier>
  </metadata>
  <manifest><item href="index_split_000.html" id="id1" media-type="application/xhtml+xml"/></manifest>
  <spine toc="ncx"><itemref idref="id1"/></spine>
</package>"""
NCX = """<?xml version='1.0' encoding='utf-8'?>
<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1">
  <navMap>
    <navPoint id="{uuid}" playOrder="1"><navLabel><text>Chapter 1</text></navLabel></navPoint>
  </navMap>
</ncx>"""
CHAPTER = """<?xml version='1.0' encoding='utf-8'?>
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Pass Through</title></head>
<body><h1>Chapter 1</h1>
<p>{text}</p>
</body></html>"""


def make_epub(path: Path, text: str, uuid: str) -> str:
    with zipfile.ZipFile(path, "w") as book:
        book.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        book.writestr(
            "META-INF/container.xml",
            '<container><rootfiles><rootfile full-path="content.opf"/></rootfiles></container>',
        )
        book.writestr("content.opf", OPF.format(uuid=uuid))
        book.writestr("toc.ncx", NCX.format(uuid=uuid))
        book.writestr("index_split_000.html", CHAPTER.format(text=text))
    return str(path)


def test_compare_epub(tmp_path: Path) -> None:
    gold = make_epub(tmp_path / "gold.epub", "It was a dark night.", "uuid-gold")
    # a rebuilt book: other identifiers and navPoint ids, the same text
    assert mf.compare_epub(make_epub(tmp_path / "a.epub", "It was a dark night.", "uuid-other"), gold) == 1.0
    score = mf.compare_epub(make_epub(tmp_path / "b.epub", "It was a bright morning.", "uuid-gold"), gold)
    assert 0.0 < score < 1.0
    assert mf.compare_epub(write(tmp_path / "c.epub", "not a zip"), gold) == 0.0
    assert mf.compare_epub(_zip(tmp_path / "d.epub", {"mimetype": b"application/epub+zip"}), gold) == 0.0


# -- Python test suite ---------------------------------------------------------------------------------

SUITE = """
import settings

def test():
    return settings.WIDTH == 800 and settings.HEIGHT == 600
"""


def test_check_python_file_by_test_suite_runs_in_a_subprocess(tmp_path: Path) -> None:
    result_dir, gold_dir = tmp_path / "result", tmp_path / "gold"
    suite = write(gold_dir / "test_suite.py", SUITE)
    good = write(result_dir / "settings.py", "WIDTH = 800\nHEIGHT = 600\n")
    main = write(result_dir / "main.py", "import settings\n")
    assert mf.check_python_file_by_test_suite([main, good], suite) == 1.0
    write(result_dir / "settings.py", "WIDTH = 640\nHEIGHT = 480\n")
    assert mf.check_python_file_by_test_suite([main, good], suite) == 0.0
    write(result_dir / "settings.py", "raise SystemExit(3)\n")
    assert mf.check_python_file_by_test_suite([main, good], suite) == 0.0
    # a game whose import never returns is killed at the timeout and scores 0
    write(result_dir / "settings.py", "import time\nwhile True:\n    time.sleep(0.05)\n")
    started = time.monotonic()
    assert mf.check_python_file_by_test_suite([main, good], suite, timeout_s=1.5) == 0.0
    assert time.monotonic() - started < 10
    custom = write(gold_dir / "custom.py", "def check():\n    return True\n")
    assert mf.check_python_file_by_test_suite(good, custom, test_function_name="check") == 1.0
    assert mf.check_python_file_by_test_suite(good, None) == 0.0
    assert "dynamic_module" not in __import__("sys").modules  # nothing leaked into this process


# -- docx and xlsx -------------------------------------------------------------------------------------

REFS = ["Smith, J. (2020). Health workforce.", "Doe, A. (2019). Retention in Europe."]


def test_compare_references(tmp_path: Path) -> None:
    gold = make_docx(tmp_path / "case study gold.docx", ["Case study", "Body text", "References", *REFS])
    options = {"content_only": True, "reference_base_result": 0.92}
    assert (
        mf.compare_references(make_docx(tmp_path / "a.docx", ["Case", "References", *REFS, ""]), gold, **options) == 1.0
    )
    close = make_docx(tmp_path / "b.docx", ["References", REFS[0], REFS[1].replace("2019", "2018")])
    assert 0.0 < mf.compare_references(close, gold, **options) < 1.0
    swapped = make_docx(tmp_path / "c.docx", ["References", REFS[1], REFS[0]])
    assert mf.compare_references(swapped, gold, **options) == 0.0
    assert mf.compare_references(make_docx(tmp_path / "d.docx", ["References", REFS[0]]), gold, **options) == 0.0
    assert mf.compare_references(make_docx(tmp_path / "e.docx", ["no heading"]), gold, **options) == 0.0
    assert mf.compare_references(None, gold) == 0.0


ADDRESSES = ["深圳市福田区益田路5055号信息枢纽大厦西门一楼", "福田区正义街1号", "深圳市福田区振兴路108号"]


def test_fuzzy_place_math(tmp_path: Path) -> None:
    rules = {"expected": [*ADDRESSES, "福田区振兴路108号"]}
    assert mf.fuzzy_place_math(make_docx(tmp_path / "a.docx", ADDRESSES), rules) == 1.0
    near = make_docx(tmp_path / "b.docx", [ADDRESSES[0], "", ADDRESSES[1], "福田区振兴路109号"])
    assert 0.8 < mf.fuzzy_place_math(near, rules) < 1.0
    assert mf.fuzzy_place_math(make_docx(tmp_path / "c.docx", ADDRESSES[:2]), rules) == 0.0
    assert mf.fuzzy_place_math(None, rules) == 0.0


CITIES: list[Any] = ["Scottsdale", "Atlanta", ["Montreal", "Montréal"], ["New York", "New York City", "NYC"]]


def test_compare_conference_city_in_order(tmp_path: Path) -> None:
    def book(name: str, cities: list[str | None]) -> str:
        wb = openpyxl.Workbook()
        ws = wb.active
        ws.append(["Conference", "Year", "City"])
        for i, city in enumerate(cities):
            ws.append([f"C{i}", 2000 + i, city])
        wb.save(tmp_path / name)
        return str(tmp_path / name)

    rules = {"expected": CITIES}
    # the metric reads C2:C22 (21 cells): fill the rest so the expected list covers them
    tail = ["Vancouver"] * 17
    full_rules = {"expected": CITIES + tail}
    assert (
        mf.compare_conference_city_in_order(
            book("a.xlsx", ["Scottsdale, AZ", "Atlanta", "Montréal", "NYC", *tail]), full_rules
        )
        == 1.0
    )
    assert (
        mf.compare_conference_city_in_order(
            book("b.xlsx", ["Atlanta", "Scottsdale", "Montreal", "NYC", *tail]), full_rules
        )
        == 0.0
    )
    # empty cells (None) or a short expected list score 0, as OSWorld's bare except does
    assert (
        mf.compare_conference_city_in_order(book("c.xlsx", ["Scottsdale", "Atlanta", "Montreal", "NYC"]), rules) == 0.0
    )
    assert mf.compare_conference_city_in_order(None, rules) == 0.0


# -- getters -------------------------------------------------------------------------------------------


def test_content_from_vm_file_reads_the_last_row_like_pandas(tmp_path: Path) -> None:
    home, cache = tmp_path / "home", tmp_path / "cache"
    (home / "Desktop").mkdir(parents=True)
    cache.mkdir()
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.append(["Name", "Citations", "h-index", "i10-index", "Top paper", "Link", "Score"])
    ws.append(["Geoffrey Hinton", 900000, 190, 500, "Backprop", "https://a", 1.5])
    ws.append(["Yann LeCun", 345074, 147, 372, "Deep learning", "https://hal.science/hal-04206682/document", None])
    ws.append([None] * 7)  # a trailing empty row, which pandas drops
    wb.save(home / "Desktop" / "researchers.xlsx")
    client = FakeClient(home, cache)
    spec = {
        "type": "content_from_vm_file",
        "path": "/home/user/Desktop/researchers.xlsx",
        "file_type": "xlsx",
        "file_content": "last_row",
    }
    row = mf.get_content_from_vm_file(client, spec)
    assert row == [
        "Yann LeCun",
        "345074",
        "147",
        "372",
        "Deep learning",
        "https://hal.science/hal-04206682/document",
        "nan",
    ]
    assert (cache / "researchers.xlsx").is_file()
    rules = ["Yann LeCun", "345074", "147", "372", "Deep learning", "https://hal.science/hal-04206682/document", "nan"]
    assert METRICS["literal_match"](row, rules, type="list", ignore_case=True) == 1.0
    assert mf.get_content_from_vm_file(client, dict(spec, path="/home/user/Desktop/missing.xlsx")) is None
    with pytest.raises(ValueError, match="file_type"):
        mf.get_content_from_vm_file(client, dict(spec, file_type="csv"))


def test_vm_command_error_and_time_diff_range(tmp_path: Path) -> None:
    client = FakeClient(tmp_path, tmp_path)
    spec = {"type": "vm_command_error", "command": ["python", "-c", "from InstructorEmbedding import INSTRUCTOR;"]}
    error = mf.get_vm_command_error(client, spec)
    assert "Error:" in error
    assert METRICS["check_include_exclude"](error, {"include": [], "exclude": ["Error:"]}) == 0.0
    assert mf.get_vm_command_error(client, {"command": "echo ok", "shell": "true"}) == ""
    assert client.commands[-1] == ("echo ok", True)
    assert mf.get_time_diff_range(client, {"type": "time_diff_range", "diff_range_in_minutes": "60"}) == "60"
    assert mf.get_time_diff_range(client, {"type": "time_diff_range"}) is None


# -- registration against the real tasks' shapes -------------------------------------------------------

REAL_EVALUATORS: list[dict[str, Any]] = [
    # multi_apps/337d318b (compare_pdfs), 185f29bd (lists of PDFs)
    {
        "func": "compare_pdfs",
        "result": {
            "type": "vm_file",
            "path": "/home/user/Desktop/problematic/Invoice # 243729.pdf",
            "dest": "Invoice # 243729.pdf",
        },
        "expected": {"type": "vm_file", "path": "/home/user/gold.pdf", "dest": "gold.pdf"},
    },
    # multi_apps/c867c42d
    {
        "func": ["compare_csv", "compare_table"],
        "conj": "and",
        "result": [
            {"type": "vm_file", "path": "/home/user/Desktop/contacts.csv", "dest": "contacts.csv"},
            {"type": "vm_file", "path": "/home/user/Desktop/contacts.xlsx", "dest": "contacts.xlsx"},
        ],
        "expected": [
            {"type": "vm_file", "path": "/home/user/g.csv", "dest": "contacts_gold.csv"},
            {"type": "vm_file", "path": "/home/user/g.xlsx", "dest": "contacts_gold.xlsx"},
        ],
        "options": [{}, {"rules": [{"type": "sheet_data", "sheet_idx0": "RI0", "sheet_idx1": "EI0"}]}],
    },
    # multi_apps/0e5303d4
    {
        "func": "compare_archive",
        "result": {"type": "vm_file", "path": "/home/user/lecture_slides.zip", "dest": "lecture_slides.zip"},
        "expected": {"type": "vm_file", "path": "/home/user/g.zip", "dest": "gold_lecture_slides.zip"},
        "options": {"file_path": "lecture_slides", "file_type": "pdf"},
    },
    # multi_apps/788b3701
    {
        "func": "diff_text_file",
        "result": {"type": "vm_file", "path": "/home/user/Documents/Early Buildings.tex", "dest": "download.tex"},
        "expected": {"type": "vm_file", "path": "/home/user/real.tex", "dest": "real.tex"},
    },
    # multi_apps/26150609
    {
        "func": "check_python_file_by_test_suite",
        "result": {
            "type": "vm_file",
            "path": ["/home/user/Desktop/snake/food.py", "/home/user/Desktop/snake/main.py"],
            "dest": ["food.py", "main.py"],
            "multi": True,
        },
        "expected": {"type": "vm_file", "path": "/home/user/test_suite.py", "dest": "test_suite.py"},
    },
    # multi_apps/8df7e444, e135df7c, 42d25c08, 2c1ebcd7, 6f4073b8, dd60633f, 7ff48d5b
    {
        "func": "compare_zip_files",
        "result": {"type": "vm_file", "path": "/home/user/R.zip", "dest": "R.zip"},
        "expected": {"type": "vm_file", "path": "/home/user/G.zip", "dest": "G.zip"},
    },
    {
        "func": "compare_htmls",
        "result": {"type": "vm_file", "path": "/home/user/Desktop/a.html", "dest": "a.html"},
        "expected": {"type": "vm_file", "path": "/home/user/g.html", "dest": "g.html"},
    },
    {
        "func": "compare_epub",
        "result": {
            "type": "vm_file",
            "dest": "Pass Through.epub",
            "path": "/home/user/Documents/Novels/Pass Through/Pass Through.epub",
        },
        "expected": {"type": "vm_file", "path": "/home/user/g.epub", "dest": "Pass Through Gold.epub"},
    },
    {
        "func": "compare_references",
        "result": {
            "type": "vm_file",
            "path": "/home/user/Desktop/students work/case study.docx",
            "dest": "case study.docx",
        },
        "expected": {"type": "vm_file", "path": "/home/user/g.docx", "dest": "case study gold.docx"},
        "options": {"content_only": True, "reference_base_result": 0.92},
    },
    {
        "func": "compare_conference_city_in_order",
        "result": {"type": "vm_file", "path": "/home/user/Desktop/ConferenceCity.xlsx", "dest": "ConferenceCity.xlsx"},
        "expected": {"type": "rule", "rules": {"expected": ["Scottsdale", ["Montreal", "Montréal"]]}},
    },
    {
        "func": "compare_python_pure_text",
        "result": {"type": "vm_file", "path": "/home/user/colab.py", "dest": "colab.py"},
        "expected": {"type": "vm_file", "path": "/home/user/g.py", "dest": "colab_Gold.py"},
    },
    {
        "func": "fuzzy_place_math",
        "result": {"type": "vm_file", "path": "/home/user/Desktop/AllLocations.docx", "dest": "AllLocations.docx"},
        "expected": {"type": "rule", "rules": {"expected": ["福田区正义街1号"]}},
    },
    # multi_apps/2373b66a
    {
        "func": ["file_contains", "check_line_number"],
        "result": [
            {
                "type": "vm_file",
                "path": "/home/user/Desktop/System_Resources_Report.txt",
                "dest": "System_Resources_Report.txt",
            }
        ]
        * 2,
        "expected": [
            {"type": "rule", "rules": {"expected": ["CPU", "%user"]}},
            {"type": "rule", "rules": {"expected": "31"}},
        ],
    },
    # multi_apps/7f35355e, a503b07f, libreoffice_calc/aa3a8974
    {
        "func": "compare_result_files",
        "result": {"type": "vm_file", "path": "/home/user/Desktop/result.txt", "dest": "result.txt"},
        "expected": {"type": "vm_file", "path": "/home/user/g.txt", "dest": "result_gold.txt"},
    },
    {
        "func": "compare_pdf_images",
        "expected": {"type": "vm_file", "path": "/home/user/g.pdf", "dest": "receipt_Gold.pdf"},
        "result": {"type": "vm_file", "path": "/home/user/Desktop/receipt.pdf", "dest": "receipt.pdf"},
    },
    {
        "func": "check_pdf_pages",
        "result": {
            "type": "vm_file",
            "path": "/home/user/Resize_Cells_Fit_Page.pdf",
            "dest": "Resize_Cells_Fit_Page.pdf",
        },
        "expected": {"type": "rule", "rules": {"relation": "eq", "ref_value": 1}},
    },
    # multi_apps/716a6079, 26660ad1, 5990457f, 69acbb55
    {
        "func": "is_in_vm_clickboard",
        "expected": {"type": "vm_command_line", "command": "xsel --clipboard --output", "shell": "true"},
        "result": {"type": "rule", "rules": {"expected": "/home/user/Data3/List3/secret.docx"}},
    },
    {
        "func": "compare_time_in_speedtest_results",
        "result": {
            "type": "vm_file",
            "path": "/home/user/Test/Speed/Speedtest Results Export-.csv",
            "dest": "Speedtest Results Export-.csv",
        },
        "expected": {"type": "time_diff_range", "diff_range_in_minutes": "60"},
    },
    {
        "func": "literal_match",
        "result": {
            "type": "content_from_vm_file",
            "path": "/home/user/Desktop/researchers.xlsx",
            "file_type": "xlsx",
            "file_content": "last_row",
        },
        "expected": {"type": "rule", "rules": ["Yann LeCun"]},
        "options": {"type": "list", "ignore_case": True},
    },
    {
        "func": "check_include_exclude",
        "result": {
            "type": "vm_command_error",
            "command": ["python", "-c", "from InstructorEmbedding import INSTRUCTOR;"],
        },
        "expected": {"type": "rule", "rules": {"include": [], "exclude": ["Error:"]}},
    },
]


def _names(evaluator: dict[str, Any]) -> set[str]:
    names: set[str] = set()
    funcs = evaluator["func"] if isinstance(evaluator["func"], list) else [evaluator["func"]]
    names.update(funcs)
    for key in ("result", "expected"):
        specs = evaluator[key] if isinstance(evaluator[key], list) else [evaluator[key]]
        names.update(spec["type"] for spec in specs)
    return names


def test_every_registered_name_is_used_by_a_real_task_shape_and_is_supported() -> None:
    used = set().union(*(_names(ev) for ev in REAL_EVALUATORS))
    assert set(mf.METRICS) <= used
    assert set(mf.GETTERS) <= used
    for i, evaluator in enumerate(REAL_EVALUATORS):
        task = OSWorldTask.from_dict({"id": f"t{i}", "instruction": "x", "evaluator": evaluator})
        blockers = [(u.kind, u.name) for u in unsupported(task)]
        assert blockers == [], (evaluator["func"], blockers)
    for name, func in mf.METRICS.items():
        # merged into the registry the evaluator uses (compare_archive with that registry handed in)
        registered = METRICS[name]
        assert getattr(registered, "__wrapped__", registered) is func


def test_a_real_task_scores_through_evaluate(tmp_path: Path) -> None:
    rows = "\n".join(f"10:00:{i:02d} AM  all  1.0  0.0  0.5  0.0  0.0  98.5" for i in range(30))
    report = write(tmp_path / "System_Resources_Report.txt", SAR.format(rows=rows))
    evaluator = next(ev for ev in REAL_EVALUATORS if ev["func"] == ["file_contains", "check_line_number"])
    task = OSWorldTask.from_dict({"id": "2373b66a", "instruction": "sar", "evaluator": evaluator})
    score, details = evaluate(task, last_action="DONE", get=lambda spec: report)
    assert score == 1.0, details
    os.remove(report)
    score, details = evaluate(task, last_action="DONE", get=lambda spec: None)
    assert score == 0.0
