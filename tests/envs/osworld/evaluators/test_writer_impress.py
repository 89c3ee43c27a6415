"""OSWorld's Writer/Impress metrics on documents generated here with python-docx / python-pptx."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pytest

docx = pytest.importorskip("docx", reason="python-docx is the osworld-office extra (in dev); pip install python-docx")
pptx = pytest.importorskip("pptx", reason="python-pptx is the osworld-office extra (in dev); pip install python-pptx")

from docx.enum.text import WD_PARAGRAPH_ALIGNMENT, WD_TAB_ALIGNMENT  # noqa: E402
from docx.shared import Inches as DocxInches  # noqa: E402
from docx.shared import Pt as DocxPt  # noqa: E402
from pptx.dml.color import RGBColor  # noqa: E402
from pptx.enum.text import PP_ALIGN  # noqa: E402
from pptx.util import Inches, Pt  # noqa: E402

from agentrl.envs.osworld.evaluators import METRICS  # noqa: E402
from agentrl.envs.osworld.evaluators import impress as mp  # noqa: E402
from agentrl.envs.osworld.evaluators import writer as md  # noqa: E402
from agentrl.envs.osworld.tasks.format import OSWorldTask, unsupported  # noqa: E402

# -- document builders ------------------------------------------------------------------------


def make_docx(path: Path, paragraphs: list[Any], **kw: Any) -> str:
    """``paragraphs``: strings, or dicts ``{"text", "italic", "size", "strike", "subscript", "font",
    "spacing", "align", "tabs": [(inches, alignment)], "page_break"}``; ``table``: rows of cell texts;
    ``footer``: footer text."""
    document = docx.Document()
    for item in paragraphs:
        spec = {"text": item} if isinstance(item, str) else item
        paragraph = document.add_paragraph()
        run = paragraph.add_run(spec["text"])
        run.italic = spec.get("italic")
        run.font.strike = spec.get("strike")
        run.font.subscript = spec.get("subscript")
        if "size" in spec:
            run.font.size = DocxPt(spec["size"])
        if "font" in spec:
            run.font.name = spec["font"]
        if "spacing" in spec:
            paragraph.paragraph_format.line_spacing = spec["spacing"]
        if "align" in spec:
            paragraph.paragraph_format.alignment = spec["align"]
        for inches, alignment in spec.get("tabs", []):
            paragraph.paragraph_format.tab_stops.add_tab_stop(DocxInches(inches), alignment)
        if spec.get("page_break"):
            run.add_break(docx.enum.text.WD_BREAK.PAGE)
    if "table" in kw:
        rows = kw["table"]
        table = document.add_table(rows=len(rows), cols=len(rows[0]))
        for i, row in enumerate(rows):
            for j, text in enumerate(row):
                table.cell(i, j).text = text
    if "footer" in kw:
        document.sections[0].footer.paragraphs[0].text = kw["footer"]
    document.save(str(path))
    return str(path)


def make_pptx(path: Path, slides: list[list[dict[str, Any]]], **kw: Any) -> str:
    """Each slide a list of text boxes ``{"text", "box": (l, t, w, h) inches, "bold", "size", "font",
    "color", "align", "level", "underline", "italic"}``, or ``{"table": rows}``; ``notes``: per-slide notes;
    ``portrait``: swap the slide size."""
    prs = pptx.Presentation()
    if kw.get("portrait"):
        prs.slide_width, prs.slide_height = prs.slide_height, prs.slide_width
    blank = prs.slide_layouts[6]
    for index, shapes in enumerate(slides):
        slide = prs.slides.add_slide(blank)
        for spec in shapes:
            left, top, width, height = (Inches(v) for v in spec.get("box", (1, 1, 4, 1)))
            if "table" in spec:
                rows = spec["table"]
                table = slide.shapes.add_table(len(rows), len(rows[0]), left, top, width, height).table
                for i, row in enumerate(rows):
                    for j, text in enumerate(row):
                        table.cell(i, j).text = text
                continue
            frame = slide.shapes.add_textbox(left, top, width, height).text_frame
            paragraph = frame.paragraphs[0]
            run = paragraph.add_run()
            run.text = spec["text"]
            if "align" in spec:
                paragraph.alignment = spec["align"]
            if "level" in spec:
                paragraph.level = spec["level"]
            font = run.font
            for name in ("bold", "italic", "underline"):
                if name in spec:
                    setattr(font, name, spec[name])
            if "size" in spec:
                font.size = Pt(spec["size"])
            if "font" in spec:
                font.name = spec["font"]
            if "color" in spec:
                font.color.rgb = RGBColor(*spec["color"])
        notes = kw.get("notes")
        if notes:
            slide.notes_slide.notes_text_frame.text = notes[index]
    prs.save(str(path))
    return str(path)


def xcu(path: Path, item: str, prop: str, value: str) -> str:
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<oor:items xmlns:oor="http://openoffice.org/2001/registry" '
        'xmlns:xs="http://www.w3.org/2001/XMLSchema">\n'
        f'<item oor:path="{item}"><prop oor:name="{prop}" oor:op="fuse"><value>{value}</value></prop></item>\n'
        "</oor:items>\n", encoding="utf-8")
    return str(path)


# -- registration -----------------------------------------------------------------------------


def test_metrics_are_registered_and_no_longer_block() -> None:
    for name in ("compare_docx_files", "compare_pptx_files", "compare_docx_tables", "compare_line_spacing",
                 "check_tabstops", "check_transition", "check_auto_saving_time"):
        assert name in METRICS
    task = OSWorldTask.from_dict({"id": "t", "instruction": "x", "evaluator": {
        "func": ["compare_pptx_files", "compare_docx_files"],
        "result": [{"type": "vm_file", "path": "/a.pptx", "dest": "a.pptx"},
                   {"type": "vm_file", "path": "/a.docx", "dest": "a.docx"}],
        "expected": [{"type": "cloud_file", "path": "http://x/a.pptx", "dest": "e.pptx"},
                     {"type": "cloud_file", "path": "http://x/a.docx", "dest": "e.docx"}],
        "options": [{"examine_shape": False}, {}]}})
    assert [u for u in unsupported(task) if u.kind == "metric"] == []


# -- docx -------------------------------------------------------------------------------------


def test_compare_docx_files_equal_and_different(tmp_path: Path) -> None:
    a = make_docx(tmp_path / "a.docx", ["Hello world", "Second"])
    b = make_docx(tmp_path / "b.docx", ["Hello world", "Second"])
    c = make_docx(tmp_path / "c.docx", ["Hello world", "Other"])
    assert md.compare_docx_files(a, b) == 1.0
    assert md.compare_docx_files(a, c) == 0.0
    assert md.compare_docx_files(None, b) == 0.0
    assert md.compare_docx_files(str(tmp_path / "missing.docx"), b) == 0.0
    assert md.compare_docx_files(a, str(tmp_path / "b.txt")) == 0.0  # mixed types


def test_compare_docx_files_options(tmp_path: Path) -> None:
    base = make_docx(tmp_path / "base.docx", ["Hello   world", "Second"])
    split = make_docx(tmp_path / "split.docx", ["Hello world Second"])
    assert md.compare_docx_files(base, split) == 1.0  # ignore_blanks (default) joins paragraphs
    assert md.compare_docx_files(base, split, ignore_blanks=False) == 0.0
    upper = make_docx(tmp_path / "upper.docx", ["HELLO world", "second"])
    assert md.compare_docx_files(base, upper) == 0.0
    assert md.compare_docx_files(base, upper, ignore_case=True) == 1.0
    swapped = make_docx(tmp_path / "swapped.docx", ["Second", "Hello   world"])
    assert md.compare_docx_files(base, swapped) == 0.0
    assert md.compare_docx_files(base, swapped, ignore_order=True) == 1.0
    exact = make_docx(tmp_path / "exact.docx", ["hello   WORLD", "Second"])
    assert md.compare_docx_files(base, exact, ignore_blanks=False, ignore_case=True) == 1.0
    near = make_docx(tmp_path / "near.docx", ["Hello world", "Secund"])
    score = md.compare_docx_files(base, near, content_only=True)
    assert 0.85 < score < 1.0
    assert md.compare_docx_files(base, base, content_only=True) == 1.0


def test_compare_docx_files_odt(tmp_path: Path) -> None:
    def odt(name: str, body: str) -> str:
        path = tmp_path / name
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("content.xml", '<office:document-content '
                             'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
                             'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body>'
                             f"<office:text>{body}</office:text></office:body></office:document-content>")
        return str(path)

    a = odt("a.odt", "<text:p>Hello <text:span>bold</text:span> end</text:p><text:p>Two</text:p>")
    b = odt("b.odt", "<text:p>Hello bold end</text:p><text:p>Two</text:p>")
    c = odt("c.odt", "<text:p>Hello end</text:p><text:p>Two</text:p>")
    assert md.compare_docx_files(a, b) == 1.0
    assert md.compare_docx_files(a, c) == 0.0


def test_docx_tables_lines_and_new_lines(tmp_path: Path) -> None:
    a = make_docx(tmp_path / "a.docx", ["x"], table=[["1", "2"], ["3", "4"]])
    b = make_docx(tmp_path / "b.docx", ["y"], table=[["1", " 2 "], ["3", "4"]])
    c = make_docx(tmp_path / "c.docx", ["x"], table=[["1", "2"], ["3", "5"]])
    d = make_docx(tmp_path / "d.docx", ["x"], table=[["1", "2", "x"], ["3", "4", "y"]])
    assert md.compare_docx_tables(a, b) == 1.0  # cell text stripped; body text not looked at
    assert md.compare_docx_tables(a, c) == 0.0
    assert md.compare_docx_tables(a, d) == 0.0
    one = make_docx(tmp_path / "one.docx", ["b", "a", "", "a"])
    two = make_docx(tmp_path / "two.docx", ["a", "b"])
    assert md.compare_docx_lines(one, two) == 1.0
    assert md.compare_docx_lines(one, c) == 0.0
    gaps = make_docx(tmp_path / "gaps.docx", ["a", "", "b"])
    assert md.compare_docx_files_and_ignore_new_lines(gaps, two) == 1.0
    assert md.compare_docx_files_and_ignore_new_lines(gaps, two, ignore_blanks=False) == 1.0
    assert md.compare_docx_files_and_ignore_new_lines(gaps, one) == 0.0


def test_compare_line_spacing(tmp_path: Path) -> None:
    a = make_docx(tmp_path / "a.docx", [{"text": "one", "spacing": 2.0}, "two"])
    b = make_docx(tmp_path / "b.docx", [{"text": "one", "spacing": 2.0}, "two"])
    c = make_docx(tmp_path / "c.docx", [{"text": "one", "spacing": 1.5}, "two"])
    d = make_docx(tmp_path / "d.docx", [{"text": "uno", "spacing": 2.0}, "two"])
    assert md.compare_line_spacing(a, b) == 1.0
    assert md.compare_line_spacing(a, c) == 0.0  # formatting differs
    assert md.compare_line_spacing(a, d) == 0.0  # text differs
    assert md.compare_docx_files(a, c) == 1.0  # the plain text comparison ignores spacing


def test_check_italic_strike_subscript_font(tmp_path: Path) -> None:
    plain = make_docx(tmp_path / "plain.docx", ["a", "b"])
    good = make_docx(tmp_path / "good.docx", [{"text": "a", "italic": True, "size": 14}, "b"])
    bad = make_docx(tmp_path / "bad.docx", [{"text": "a", "italic": True, "size": 12}, "b"])
    assert md.check_italic_font_size_14(good, plain) == 1.0
    assert md.check_italic_font_size_14(bad, plain) == 0.0
    struck = make_docx(tmp_path / "struck.docx", ["a", {"text": "b", "strike": True}])
    assert md.evaluate_strike_through_last_paragraph(struck, plain) == 1.0
    assert md.evaluate_strike_through_last_paragraph(good, plain) == 0.0
    sub = make_docx(tmp_path / "sub.docx", [{"text": "a", "subscript": True}, "b"])
    assert md.compare_subscript_contains(sub, sub) == 1.0
    assert md.compare_subscript_contains(sub, plain) == 0.0
    times = make_docx(tmp_path / "times.docx", [{"text": "a", "font": "Times New Roman"},
                                                {"text": "b", "font": "Times New Roman"}])
    mixed = make_docx(tmp_path / "mixed.docx", [{"text": "a", "font": "Times New Roman"}, "b"])
    assert md.compare_font_names(times, {"font_name": "Times New Roman"}) == 1.0
    assert md.compare_font_names(mixed, {"font_name": "Times New Roman"}) == 0.0


def test_docx_single_file_checks(tmp_path: Path) -> None:
    centered = make_docx(tmp_path / "c.docx", [{"text": "Title", "align": WD_PARAGRAPH_ALIGNMENT.CENTER}, "x"])
    plain = make_docx(tmp_path / "p.docx", ["Title", "x"])
    assert md.is_first_line_centered(centered) == 1.0
    assert md.is_first_line_centered(plain) == 0.0
    broken = make_docx(tmp_path / "b.docx", [{"text": "a", "page_break": True}, "x"])
    assert md.contains_page_break(broken) == 1.0
    assert md.contains_page_break(plain) == 0.0
    footed = make_docx(tmp_path / "f.docx", ["x"], footer="Page 1")
    worded = make_docx(tmp_path / "w.docx", ["x"], footer="Page")
    assert md.has_page_numbers_in_footers(footed) == 1.0
    assert md.has_page_numbers_in_footers(worded) == 0.0
    assert md.has_page_numbers_in_footers(None) == 0.0


def test_check_tabstops(tmp_path: Path) -> None:
    right = WD_TAB_ALIGNMENT.RIGHT
    expected = make_docx(tmp_path / "e.docx", [{"text": "a b c\t1", "tabs": [(5, right)]}])
    same = make_docx(tmp_path / "s.docx", [{"text": "a b c\t1", "tabs": [(5, right)]}])
    shifted = make_docx(tmp_path / "sh.docx", [{"text": "a b c\t1", "tabs": [(4, right)]}])
    left = make_docx(tmp_path / "l.docx", [{"text": "a b c\t1", "tabs": [(5, WD_TAB_ALIGNMENT.LEFT)]}])
    assert md.check_tabstops(same, expected) == pytest.approx(1.0)
    drift = md.check_tabstops(shifted, expected)
    assert 0.0 < drift < 1.0  # one inch of drift over a 6-inch text width
    assert drift == pytest.approx(1 - 1 / 6, abs=0.01)
    assert md.check_tabstops(left, expected) == 0.0
    assert md.check_tabstops(same, expected, word_number_split_by_tabstop=3, index=0) == pytest.approx(1.0)
    assert md.check_tabstops(same, expected, word_number_split_by_tabstop=2) == 0.0


def test_compare_insert_equation_and_images(tmp_path: Path) -> None:
    a = make_docx(tmp_path / "a.docx", ["x"])
    assert md.compare_insert_equation(a, a) == 0.0  # no embedded object
    assert md.compare_contains_image(a, a) == 1.0
    assert md.compare_docx_images(a, a) == 1.0


def test_registry_metrics(tmp_path: Path) -> None:
    font = xcu(tmp_path / "f.xcu", "/org.openoffice.Office.Writer/DefaultFont", "Standard", "Times New Roman")
    assert md.find_default_font(font, {"font_name": "Times New Roman"}) == 1.0
    assert md.find_default_font(font, {"font_name": "Arial"}) == 0.0
    save = xcu(tmp_path / "s.xcu", "/org.openoffice.Office.Common/Save/Document", "AutoSaveTimeIntervall", "3")
    assert mp.check_auto_saving_time(save, {"minutes": 3}) == 1.0
    assert mp.check_auto_saving_time(save, {"minutes": 10}) == 0.0
    assert mp.check_auto_saving_time(font, {"minutes": 3}) == 0.0
    off = xcu(tmp_path / "o.xcu", "/org.openoffice.Office.Impress/Misc/Start", "EnablePresenterScreen", "false")
    on = xcu(tmp_path / "n.xcu", "/org.openoffice.Office.Impress/Misc/Start", "EnablePresenterScreen", "true")
    assert mp.check_presenter_console_disable(off) == 1.0
    assert mp.check_presenter_console_disable(on) == 0.0
    assert mp.check_presenter_console_disable(str(tmp_path / "missing.xcu")) == 0.0


# -- pptx -------------------------------------------------------------------------------------

TITLE = {"text": "Title", "size": 28, "bold": True, "font": "Arial", "color": (0, 0, 0)}


def test_compare_pptx_files_equal_and_text(tmp_path: Path) -> None:
    a = make_pptx(tmp_path / "a.pptx", [[TITLE, {"text": "body"}], [{"text": "two"}]])
    b = make_pptx(tmp_path / "b.pptx", [[TITLE, {"text": "body"}], [{"text": "two"}]])
    c = make_pptx(tmp_path / "c.pptx", [[TITLE, {"text": "BODY"}], [{"text": "two"}]])
    assert mp.compare_pptx_files(a, b) == 1.0
    assert mp.compare_pptx_files(a, c) == 0.0
    assert mp.compare_pptx_files(a, c, examine_text=False, examine_bullets=False) == 1.0
    assert mp.compare_pptx_files(a, c, examine_text=False) == 0.0  # the bullet list carries the text too
    assert mp.compare_pptx_files(None, b) == 0.0
    assert mp.compare_pptx_files(str(tmp_path / "missing.pptx"), b) == 0.0


def test_compare_pptx_files_slide_count_and_notes(tmp_path: Path) -> None:
    one = make_pptx(tmp_path / "one.pptx", [[{"text": "a"}]])
    two = make_pptx(tmp_path / "two.pptx", [[{"text": "a"}], [{"text": "b"}]])
    assert mp.compare_pptx_files(one, two) == 0.0
    assert mp.compare_pptx_files(one, two, examine_number_of_slides=False) == 1.0
    noted = make_pptx(tmp_path / "noted.pptx", [[{"text": "a"}]], notes=["speak"])
    other = make_pptx(tmp_path / "other.pptx", [[{"text": "a"}]], notes=["shout"])
    assert mp.compare_pptx_files(noted, noted) == 1.0
    assert mp.compare_pptx_files(noted, other) == 0.0
    assert mp.compare_pptx_files(noted, one) == 0.0
    assert mp.compare_pptx_files(noted, other, examine_note=False) == 1.0


@pytest.mark.parametrize(("change", "option"), [
    ({"bold": False}, "examine_font_bold"),
    ({"size": 30}, "examine_font_size"),
    ({"font": "Calibri"}, "examine_font_name"),
    ({"italic": True}, "examine_font_italic"),
    ({"underline": True}, "examine_font_underline"),
    ({"color": (255, 0, 0)}, "examine_color_rgb"),
    ({"align": PP_ALIGN.CENTER}, "examine_alignment"),
    ({"level": 1}, "examine_indent"),
    ({"box": (2, 1, 4, 1)}, "examine_shape"),
])
def test_compare_pptx_files_formatting(tmp_path: Path, change: dict[str, Any], option: str) -> None:
    a = make_pptx(tmp_path / "a.pptx", [[TITLE]])
    b = make_pptx(tmp_path / "b.pptx", [[{**TITLE, **change}]])
    assert mp.compare_pptx_files(a, b) == 0.0
    options = {option: False}
    if option == "examine_indent":
        options["examine_bullets"] = False  # the bullet list records the level as well
    assert mp.compare_pptx_files(a, b, **options) == 1.0


def test_compare_pptx_files_ignores_unknown_options_and_checks_tables(tmp_path: Path) -> None:
    a = make_pptx(tmp_path / "a.pptx", [[{"table": [["1", "2"], ["3", "4"]]}]])
    b = make_pptx(tmp_path / "b.pptx", [[{"table": [["1", "2"], ["3", "4"]]}]])
    c = make_pptx(tmp_path / "c.pptx", [[{"table": [["1", "2"], ["3", "5"]]}]])
    d = make_pptx(tmp_path / "d.pptx", [[{"table": [["1", "2", "x"], ["3", "4", "y"]]}]])
    assert mp.compare_pptx_files(a, b, examine_aligment=False) == 1.0  # OSWorld's typo is ignored
    assert mp.compare_pptx_files(a, c) == 0.0
    assert mp.compare_pptx_files(a, c, examine_text=False) == 1.0
    assert mp.compare_pptx_files(a, d, examine_shape=False) == 0.0


def test_compare_pptx_files_position_options(tmp_path: Path) -> None:
    # examine_image_size-style options compare boxes of non-matching shapes exactly
    a = make_pptx(tmp_path / "a.pptx", [[{"text": "x"}]])
    moved = make_pptx(tmp_path / "m.pptx", [[{"text": "x", "box": (1, 2, 4, 1)}]])
    assert mp.compare_pptx_files(a, moved, examine_shape=False) == 1.0
    assert mp.compare_pptx_files(a, moved, examine_shape=False, examine_modify_height=True) == 0.0
    title = {"text": "Product Comparison"}
    low = make_pptx(tmp_path / "low.pptx", [[{**title, "box": (1, 5, 4, 1)}]])
    high = make_pptx(tmp_path / "high.pptx", [[{**title, "box": (1, 1, 4, 1)}]])
    assert mp.compare_pptx_files(low, high, examine_shape=False, examine_title_bottom_position=True) == 1.0
    assert mp.compare_pptx_files(high, low, examine_shape=False, examine_title_bottom_position=True) == 0.0


def test_slide_orientation_transition_and_fill(tmp_path: Path) -> None:
    portrait = make_pptx(tmp_path / "p.pptx", [[{"text": "a"}]], portrait=True)
    landscape = make_pptx(tmp_path / "l.pptx", [[{"text": "a"}]])
    assert mp.check_slide_orientation_Portrait(portrait) == 1.0
    assert mp.check_slide_orientation_Portrait(landscape) == 0.0
    assert mp.check_transition(landscape, {"slide_idx": 0, "transition_type": "dissolve"}) == 0.0
    prs = pptx.Presentation(landscape)
    slide = prs.slides[0]
    transition = slide._element.makeelement(f"{{{mp.P_NS}}}transition", {})
    transition.append(transition.makeelement(f"{{{mp.P_NS}}}dissolve", {}))
    slide._element.insert(2, transition)
    slide.background.fill.solid()
    slide.background.fill.fore_color.rgb = RGBColor(0, 0, 255)
    done = tmp_path / "done.pptx"
    prs.save(str(done))
    assert mp.check_transition(str(done), {"slide_idx": 0, "transition_type": "dissolve"}) == 1.0
    assert mp.check_transition(str(done), {"slide_idx": 0, "transition_type": "fade"}) == 0.0
    assert mp.check_transition(str(done), {"slide_idx": 4, "transition_type": "dissolve"}) == 0.0
    assert mp.evaluate_presentation_fill_to_rgb_distance(str(done), {"rgb": [0, 0, 255]}) == pytest.approx(1.0)
    assert mp.evaluate_presentation_fill_to_rgb_distance(str(done), {"rgb": [255, 0, 0]}) < 0.5
    # the background color now differs from the untouched copy
    assert mp.compare_pptx_files(str(done), landscape) == 0.0
    assert mp.compare_pptx_files(str(done), landscape, examine_background_color=False) == 1.0


def test_check_image_stretch_and_center(tmp_path: Path) -> None:
    from PIL import Image

    image = tmp_path / "i.png"
    Image.new("RGB", (8, 8), (10, 200, 30)).save(image)

    def deck(name: str, stretched: bool) -> str:
        prs = pptx.Presentation()
        slide = prs.slides.add_slide(prs.slide_layouts[6])
        if stretched:
            slide.shapes.add_picture(str(image), 0, 0, prs.slide_width, prs.slide_height)
        else:
            slide.shapes.add_picture(str(image), Inches(1), Inches(1), Inches(2), Inches(2))
        prs.save(str(tmp_path / name))
        return str(tmp_path / name)

    original = deck("orig.pptx", stretched=False)
    assert mp.check_image_stretch_and_center(deck("good.pptx", stretched=True), original) == 1.0
    assert mp.check_image_stretch_and_center(original, original) == 0.0


def test_check_strikethrough_and_page_number_colors(tmp_path: Path) -> None:
    a = make_pptx(tmp_path / "a.pptx", [[{"text": "x"}]])
    prs = pptx.Presentation(a)
    prs.slides[0].shapes[0].text_frame.paragraphs[0].runs[0].font._element.set("strike", "sngStrike")
    prs.save(str(tmp_path / "s.pptx"))
    rules = {"slide_index_s": [0], "shape_index_s": [0], "paragraph_index_s": [0]}
    assert mp.check_strikethrough(str(tmp_path / "s.pptx"), rules) == 1.0
    assert mp.check_strikethrough(a, rules) == 0.0
    assert mp.check_strikethrough(a, {**rules, "slide_index_s": [3]}) == 0.0
    # the default template's master has no two explicit sRGB fills: no color to read
    assert mp.check_page_number_colors(a, {"color": "red"}) == 0.0


def test_missing_dependency_message_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from agentrl.core.errors import DependencyNotInstalled

    monkeypatch.setitem(sys.modules, "pptx", None)
    with pytest.raises(DependencyNotInstalled, match="osworld-office"):
        mp.open_pptx("x.pptx")


def test_evaluate_scores_a_real_task_shape(tmp_path: Path) -> None:
    """OSWorld's evaluator objects (libreoffice_impress, multi_apps) run end to end through ``evaluate``."""
    from agentrl.envs.osworld.tasks.evaluate import evaluate

    result = make_pptx(tmp_path / "result.pptx", [[TITLE]])
    expected = make_pptx(tmp_path / "expected.pptx", [[{**TITLE, "box": (1, 3, 4, 1)}]])
    wrong = make_pptx(tmp_path / "wrong.pptx", [[{**TITLE, "text": "Other"}]])
    task = OSWorldTask.from_dict({"id": "t", "instruction": "x", "evaluator": {
        "func": "compare_pptx_files",
        "result": {"type": "vm_file", "path": "/home/user/a.pptx", "dest": "a.pptx"},
        "expected": {"type": "cloud_file", "path": "https://x/a.pptx", "dest": "e.pptx"},
        "options": {"examine_shape": False, "examine_aligment": False}}})
    files = {"vm_file": result, "cloud_file": expected}
    assert evaluate(task, last_action="DONE", get=lambda spec: files[spec["type"]])[0] == 1.0
    files["vm_file"] = wrong
    assert evaluate(task, last_action="DONE", get=lambda spec: files[spec["type"]])[0] == 0.0
