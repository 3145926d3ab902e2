"""Numbers the text states, shown beside the numbers a run measured.

A chapter's prose quotes results ("the partner's probability rises to 0.416"). Where a cell measures one of
them it calls :func:`claim` with the number as the text writes it: the cell prints the measured value beside
the stated one, so a reader never has to wonder which to believe, and ``tests/test_claims.py`` reads the claims
of every chapter's FAST run (:data:`SHOWN`) and fails where a stated number is not in the chapter's text or the
value shown is further from it than the claim's tolerance.

A measurement that FAST mode cannot make faithfully (seconds of training instead of minutes) passes
``recorded=``, the full-mode value shipped with the chapter's checkpoint: the line then prints both and says
which is which, and the test holds the recorded value to the text.

Demos that aim at a result (an accuracy, a ranking) call :func:`target` instead of asserting it: a missed
target is a printed comparison — by how much, and what usually happens — never an error in a student's run.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

RECORDED = "recorded in full mode"  # the source of a claim that shows the shipped record
SHOWN: list[Claim] = []  # every claim this process has shown, in order (the claim test reads them)
_NUMBER = re.compile(r"^\s*([+\-−]?\d[\d,]*(?:\.\d+)?)\s*(%?)\s*$")


@dataclass(frozen=True)
class Claim:
    """One stated number and what was shown for it."""

    what: str
    stated: str  # exactly as the text writes it: "0.416", "90.1 %", "+7.8"
    value: float  # what the line shows and the test holds to the text: measured, or recorded when given
    tolerance: float  # in the value's own unit (a fraction for a percentage)
    measured: float | None  # what this run measured (None: nothing measured here)
    source: str  # where the value comes from, in words

    @property
    def holds(self) -> bool:
        return math.isfinite(self.value) and abs(self.value - stated_value(self.stated)) <= self.tolerance + 1e-12


def stated_value(stated: str) -> float:
    """The number a stated text means: "90.1 %" → 0.901, "−0.5" → -0.5, "20,000" → 20000."""
    found = _NUMBER.match(stated)
    if not found:
        raise ValueError(f"a stated number is a number as the text writes it, optionally with %: got {stated!r}")
    number = float(found.group(1).replace(",", "").replace("−", "-"))
    return number / 100 if found.group(2) else number


def _show(value: float, stated: str) -> str:
    """``value`` written as the text writes ``stated`` (the same decimals, a percentage or not)."""
    text = stated.strip()
    decimals = len(text.split(".", 1)[1].rstrip(" %")) if "." in text else 0
    grouped = "," if "," in text else ""  # 4,300: thousands grouped as the text groups them
    if text.endswith("%"):
        return f"{100 * value:{grouped}.{decimals}f} %"
    return f"{value:+{grouped}.{decimals}f}" if text[0] in "+−-" and value >= 0 else f"{value:{grouped}.{decimals}f}"


def claim(what: str, measured: float | None, stated: str, tolerance: float, *, recorded: float | None = None,
          source: str = "measured here") -> None:
    """Print ``what``: the value shown and the text's ``stated`` number; keep it in :data:`SHOWN` for the claim
    test.

    Args:
        what: the quantity, as a reader would name it.
        measured: this run's value (None when this run measures nothing; then ``recorded`` is required).
        stated: the number exactly as the chapter's text writes it ("0.416", "90.1 %").
        tolerance: how far the shown value may be from the stated one (a fraction for a percentage).
        recorded: the full-mode value shipped with the chapter, shown (and checked) in place of ``measured``
            when given: for FAST mode, whose run is too short to reproduce the text.
        source: where ``measured`` comes from ("the shipped network", "10 FAST-mode steps").
    """
    if measured is None and recorded is None:
        raise ValueError(f"claim {what!r}: give the measured value or the recorded one")
    stated_value(stated)  # a malformed stated number fails here, in the cell that wrote it
    value = float(recorded if recorded is not None else measured)  # type: ignore[arg-type]
    shown = Claim(what, stated, value, float(tolerance), None if measured is None else float(measured),
                  RECORDED if recorded is not None else source)
    SHOWN.append(shown)
    print(line(shown))  # nothing returned: a claim that ends a cell shows its line, not a Claim(...) below it


def line(shown: Claim) -> str:
    """The printed line: the value, where it comes from, and the text's number."""
    agree = "as the text says" if shown.holds else f"the text says {shown.stated}: further off than ±" + \
        _show(shown.tolerance, shown.stated).lstrip("+")
    if shown.source == RECORDED:
        here = "" if shown.measured is None else f"; this run: {_show(shown.measured, shown.stated)} (FAST mode: " \
                                                 "too little data or training to reproduce it)"
        return f"{shown.what}: {_show(shown.value, shown.stated)} {RECORDED}, {agree}{here}"
    return f"{shown.what}: {_show(shown.value, shown.stated)} ({shown.source}), {agree}"


def fast_run(here: str, full: str) -> None:
    """Under a demo's numbers, in FAST mode only, one line saying they are not the text's: this run's budget
    (``here``, "5 steps") against full mode's (``full``, "200"), whose runs the text quotes."""
    from dlcourse import runtime

    if runtime.is_fast():
        print(f"FAST mode: {here}, not {full}; the numbers the text quotes come from the course's full-mode runs")


USUALLY = "full mode reaches it (the text quotes such a run)"


def target(what: str, reached: bool, got: str, usually: str = USUALLY) -> bool:
    """Say whether a demo reached what it aims at, never raising: a missed target in a student's run is a
    printed comparison, not an error.

    Args:
        what: the target ("99 % of held-out sequences exactly right").
        reached: whether this run reached it.
        got: what this run measured, in words ("97.4 %").
        usually: what full-mode runs usually give ("99.6–100 % in three runs"); by default, that they reach it.
    """
    if reached:
        print(f"target reached: {what} (this run: {got})")
    else:
        print(f"target missed: {what}; this run: {got}. Usually {usually}. A miss by a little is the luck of one "
              "run, not a mistake in your code when the tests above passed: re-run the cell with another seed")
    return bool(reached)
