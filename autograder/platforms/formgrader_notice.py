"""What formgrader's pages say above their tables, in the course's terms.

formgrader shows each submission's score as the gradebook holds it: before the late policy, which only the
course applies (``make grades``). An instructor grading by hand there must not take those numbers for the final
ones, so every formgrader page opens with a short notice read fresh from the gradebook and the policy: which
submissions lose points for lateness (raw → after the penalty), how many review items are still open, and,
on the assignments page of a server without nbgrader's exchange (everywhere but ``make hub``), how chapters
reach students and come back instead of nbgrader's warning about a missing folder.

:func:`install` (called from ``nbgrader_config.py``, which formgrader's server loads before it builds its pages)
puts the course's templates in front of formgrader's own: each extends formgrader's template of the same name
(reached as ``nbgrader/<name>``) and adds the notice; nothing of formgrader's is copied or changed on disk.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates" / "formgrader"
SHOWN = 12  # late submissions or open review items listed by name; the rest are counted


@dataclass
class Notice:
    """What a formgrader page says before its own content."""

    penalty: str = ""  # where the scores stand against the late policy
    late: list[str] = field(default_factory=list)  # those that lose points for lateness, raw and final
    more_late: int = 0
    review: list[str] = field(default_factory=list)
    more_review: int = 0
    problem: str = ""  # the policy or the gradebook could not be read


def notice() -> Notice:
    """The notice as the gradebook and the policy stand now (never raises: a problem is said in the notice)."""
    from autograder.bookkeeping import export, pipeline

    shown = Notice(penalty="Scores on these pages are before the late penalty: `make grades` exports the totals "
                           f"after it (policy: {pipeline.POLICY}).")
    try:
        rules = pipeline.load_policy()
    except pipeline.PipelineError as err:
        shown.problem = f"The late policy cannot be read, so no penalty is shown here and `make grades` refuses " \
                        f"to export until it is mended: {err}"
        rules = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = export.read(pipeline.gradebook_url(), pipeline.RESULTS)
    except Exception as err:  # noqa: BLE001 - a page must still open to say what went wrong
        shown.problem = f"The gradebook could not be read for this notice: {type(err).__name__}: {err}"
        return shown
    if rules is not None:
        late = [f"{sid} · {chapter}: {got.late.days:g} day(s) late, −{got.late.penalty:g} point(s): "
                f"{got.raw:g} here, {got.final:g} in the export"
                for sid, chapter, got in export.late_marks(table, rules) if got.late.penalty > 0]
        shown.late, shown.more_late = late[:SHOWN], max(0, len(late) - SHOWN)
    opened = pipeline.open_review(table)
    shown.review = [f"{r['student']} · {r['chapter']} · {r['exercise']}" for r in opened[:SHOWN]]
    shown.more_review = max(0, len(opened) - SHOWN)
    return shown


def install() -> None:
    """Put the course's notice on formgrader's pages (see the module's docstring). A formgrader that is not
    installed, or one whose server never calls ``init_tornado_settings``, is left as it is."""
    try:
        from nbgrader.server_extensions.formgrader import formgrader, handlers
    except ImportError:
        return
    if getattr(formgrader.FormgradeExtension.init_tornado_settings, "course_notice", False):
        return
    original = formgrader.FormgradeExtension.init_tornado_settings

    def init_tornado_settings(self, webapp) -> None:
        from jinja2 import ChoiceLoader, Environment, FileSystemLoader, PrefixLoader

        original(self, webapp)
        theirs = FileSystemLoader([handlers.template_path])
        env = Environment(loader=ChoiceLoader([FileSystemLoader([str(TEMPLATES)]),
                                               PrefixLoader({"nbgrader": theirs}), theirs]),
                          autoescape=False)
        env.globals["course_notice"] = notice
        webapp.settings["nbgrader_jinja2_env"] = env

    init_tornado_settings.course_notice = True
    formgrader.FormgradeExtension.init_tornado_settings = init_tornado_settings
