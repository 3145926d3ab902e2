"""What a chapter's text states agrees with what its FAST-mode run prints.

Every number a chapter marks as a claim (``claims.claim`` in the cell that measures it) must be written in the
chapter's text exactly as the claim states it, and the value the cell shows — measured in FAST mode, or the
full-mode record where FAST mode cannot reproduce it, which the line then says — must lie within the claim's
tolerance of it. The chapters run once per session (the ``trusted_session`` that test_notebooks.py uses);
their claims are read back from the kernel.
"""

from __future__ import annotations

import json
import math
import re

import nbformat
import pytest
from conftest import CHAPTERS, solution_notebook

from autograder.bookkeeping.course_preprocessors import MODEL_ANSWER_TAG
from dlcourse import claims

READ_BACK = ("import json as _json\nfrom dataclasses import asdict as _asdict\nfrom dlcourse import claims as _claims\n"
             "print(_json.dumps([_asdict(_c) for _c in _claims.SHOWN]))")
# chapters whose text quotes trained results and marks them; each must show at least this many claims
MARKED = {"00_welcome": 2, "01_seq2seq_attention": 3, "02_transformer_blocks": 1, "03_bert_mlm": 4,
          "04_gpt_decoding": 25, "05_t5": 45, "06_vit": 21, "07_gan": 9, "08_vae": 15, "09_sparse_attention": 13,
          "10_optimizers_schedulers": 14, "11_self_supervised": 24}


def _text(chapter: str) -> str:
    """The prose students read: the chapter's markdown cells but the instructor's model answers, with line breaks
    as spaces (a number may wrap)."""
    nb = nbformat.read(solution_notebook(chapter), as_version=4)
    return " ".join(re.sub(r"\s+", " ", c.source) for c in nb.cells
                    if c.cell_type == "markdown" and MODEL_ANSWER_TAG not in c.metadata.get("tags", []))


def _written(stated: str, text: str) -> bool:
    """Whether ``stated`` is in ``text`` as a number of its own (0.44 is not found inside 0.445 or 10.44)."""
    return re.search(rf"(?<![\d.]){re.escape(stated)}(?![\d])", text) is not None


@pytest.mark.notebook
@pytest.mark.parametrize("chapter", [pytest.param(c, marks=pytest.mark.xdist_group(c)) for c in CHAPTERS])
def test_every_claim_is_in_the_text_and_the_run_shows_it(trusted_session, chapter):
    session = trusted_session(chapter)
    run = session.kernel.run_cell(READ_BACK, 60, keep=False)
    assert run.ok, run.error
    shown = [claims.Claim(**c) for c in json.loads(run.stdout.strip().splitlines()[-1])]
    assert len(shown) >= MARKED.get(chapter, 0), f"{chapter}: only {len(shown)} claims shown"
    text = _text(chapter)
    for c in shown:
        assert _written(c.stated, text), f"{chapter}: {c.what}: the text never writes {c.stated!r}"
        assert c.holds, f"{chapter}: {claims.line(c)}"


def test_a_stated_number_reads_as_the_text_writes_it():
    assert claims.stated_value("90.1 %") == pytest.approx(0.901)
    assert claims.stated_value("−0.5") == -0.5
    assert claims.stated_value("+7.8") == 7.8
    assert claims.stated_value("20,000") == 20000
    for bad in ("about 3", "3 points", "", "1.2.3"):
        with pytest.raises(ValueError):
            claims.stated_value(bad)


def test_a_claim_shows_its_value_as_the_text_writes_it_and_says_which_it_is(capsys):
    assert claims.claim("partner's probability", 0.4163, "0.416", 0.005, source="the shipped network") is None
    near = claims.SHOWN[-1]
    assert near.holds
    assert capsys.readouterr().out.strip() == \
        "partner's probability: 0.416 (the shipped network), as the text says"
    claims.claim("push on the hardest", 0.064, "90.1 %", 0.05)
    far = claims.SHOWN[-1]
    assert not far.holds
    assert "6.4 %" in claims.line(far) and "the text says 90.1 %: further off than ±5.0 %" in claims.line(far)
    claims.claim("gain (points)", 32.1, "7.8", 1.5, recorded=7.84)
    recorded = claims.SHOWN[-1]
    assert recorded.holds and recorded.value == 7.84 and recorded.measured == 32.1
    said = claims.line(recorded)
    assert said.startswith("gain (points): 7.8 recorded in full mode, as the text says; this run: 32.1 (FAST mode")
    assert claims.SHOWN[-3:] == [near, far, recorded]
    claims.claim("nothing", math.nan, "1.0", 10.0)
    assert not claims.SHOWN[-1].holds  # NaN is never within a tolerance
    claims.claim("ratio", 4282.4, "4,300", 300)
    assert claims.line(claims.SHOWN[-1]).startswith("ratio: 4,282 (measured here)")


def test_a_claim_needs_a_value_and_a_number_as_text():
    with pytest.raises(ValueError, match="measured value or the recorded one"):
        claims.claim("x", None, "1.0", 0.1)
    with pytest.raises(ValueError, match="as the text writes it"):
        claims.claim("x", 1.0, "about one", 0.1)


def test_the_claim_test_finds_a_number_only_as_a_number_of_its_own():
    assert _written("0.44", "NMI 0.44 (rotation 0.34)")
    assert not _written("0.44", "NMI 0.445") and not _written("0.44", "NMI 10.44")
    assert _written("90.1 %", "rises from 4.0 % to 90.1 % — a small")


def test_a_missed_target_is_a_printed_comparison_not_an_error(capsys):
    assert claims.target("99 % of held-out sequences", True, "99.6 %", "99.5–100 %") is True
    assert capsys.readouterr().out.startswith("target reached: 99 % of held-out sequences (this run: 99.6 %)")
    assert claims.target("99 % of held-out sequences", False, "97.9 %", "99.5–100 % in three runs") is False
    out = capsys.readouterr().out
    assert out.startswith("target missed: 99 % of held-out sequences; this run: 97.9 %. Usually 99.5–100 % in three")
    assert "not a mistake in your code" in out


def _demo_cells():
    """Every code cell of every chapter that is neither an answer nor a test: the demos and the text's code."""
    for chapter in CHAPTERS:
        nb = nbformat.read(solution_notebook(chapter), as_version=4)
        for i, cell in enumerate(nb.cells):
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type == "code" and not meta.get("grade") and not meta.get("solution"):
                yield chapter, i, cell.source


def test_no_demo_fails_a_student_because_a_result_missed_its_target():
    """A full-mode result that misses what a demo aims at is printed (claims.target), never raised: an unlucky run
    must not stop a student's Run All. A check that stays in a demo cell checks the student's code or the data."""
    raising = []
    for chapter, i, source in _demo_cells():
        for found in re.finditer(r"checks\.assert_\w+\(", source):
            end, depth = found.end(), 1
            while depth and end < len(source):  # the call: to its closing parenthesis
                depth += {"(": 1, ")": -1}.get(source[end], 0)
                end += 1
            above = source[:found.start()].splitlines()[-2:]  # the condition it stands under
            if any("is_fast()" in line for line in above) or re.search(r"\btarget\b|missed|reach",
                                                                        source[found.start():end]):
                raising.append(f"{chapter} cell {i}: {source[found.start():found.start() + 90]!r}")
    assert not raising, "demos that raise when a result misses its target:\n" + "\n".join(raising)


def test_a_fast_run_says_its_numbers_are_not_the_texts_in_fast_mode_only(capsys, monkeypatch):
    monkeypatch.setenv("DLCOURSE_FAST", "1")
    claims.fast_run("5 steps", "200")
    assert capsys.readouterr().out.strip() == ("FAST mode: 5 steps, not 200; the numbers the text quotes come from the "
                                               "course's full-mode runs")
    monkeypatch.setenv("DLCOURSE_FAST", "0")
    claims.fast_run("200 steps", "200")
    assert capsys.readouterr().out == ""
