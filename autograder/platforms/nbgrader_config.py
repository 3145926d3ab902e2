"""nbgrader's configuration of the course: :func:`configure`, called by ``autograder/nbgrader_config.py``, the
file nbgrader reads from the folder it runs in (the pipeline and formgrader run it in ``autograder/``).

nbgrader's steps map onto the repository: source → solutions/, release → course/, and the instructor's
submitted/, autograded/ and feedback/ folders plus the gradebook live in autograder/, uncommitted.
"""

import os
from pathlib import Path
from typing import Any

from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.converters import GenerateAssignment
from nbgrader.preprocessors import ClearHiddenTests, GetGrades

from autograder.bookkeeping.course_preprocessors import (
    ExerciseNames,
    LateNotice,
    MarkSkippable,
    RemoveModelAnswers,
    ResultsOnly,
)
from autograder.bookkeeping.lms_names import LMSFileNames
from autograder.platforms import formgrader_notice, one_grader

AUTOGRADER = Path(__file__).resolve().parents[1]
ROOT = AUTOGRADER.parent
TEMPLATES = AUTOGRADER / "bookkeeping" / "templates"


def configure(c: Any) -> None:
    """Set nbgrader's configuration ``c`` (the ``get_config()`` of a configuration file) for the course."""
    c.CourseDirectory.course_id = "dlcourse"
    c.CourseDirectory.root = str(ROOT)
    c.CourseDirectory.source_directory = "solutions"
    c.CourseDirectory.release_directory = "course"
    # DLCOURSE_GRADING_DIR moves submitted/, autograded/, feedback/ and the gradebook elsewhere (the test
    # suite grades in a temporary folder); DLCOURSE_GRADEBOOK overrides the gradebook alone.
    GRADING = Path(os.environ.get("DLCOURSE_GRADING_DIR", str(AUTOGRADER))).resolve()
    try:  # a grading folder that is not there yet is made, so that the gradebook can be created in it
        GRADING.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass  # read-only: nbgrader says so when it needs the gradebook
    c.CourseDirectory.submitted_directory = str(GRADING / "submitted")
    c.CourseDirectory.autograded_directory = str(GRADING / "autograded")
    c.CourseDirectory.feedback_directory = str(GRADING / "feedback")
    c.CourseDirectory.db_url = os.environ.get("DLCOURSE_GRADEBOOK", f"sqlite:///{GRADING / 'gradebook.db'}")
    c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "*.egg-info", ".DS_Store"]
    # `make zip-collect CH=…` (nbgrader zip_collect): an LMS's bulk download goes in <grading folder>/downloaded/<CH>/
    # archive/, is extracted beside it and filed under submitted/, all inside the grading folder (never the
    # repository); lms_names.py reads Canvas's, Moodle's and Blackboard's file names and matches them to the roster.
    c.ZipCollectApp.collect_directory_structure = str(GRADING / "downloaded" / "{assignment_id}" / "{collect_step}")
    c.ZipCollectApp.collector_plugin = LMSFileNames
    c.FileNameCollectorPlugin.valid_ext = [".ipynb"]
    # nbgrader's folder exchange of `make hub` (hub.py sets DLCOURSE_EXCHANGE to <HUB_ROOT>/exchange).
    c.Exchange.root = os.environ.get("DLCOURSE_EXCHANGE", "/srv/dlcourse/exchange")

    # The release drops the instructor's model answers to the recap questions before anything else, then marks the
    # cells grading may leave out (needs.py), while the reference answers and hidden tests are still there to read.
    c.GenerateAssignment.preprocessors = [RemoveModelAnswers, MarkSkippable,
                                          *GenerateAssignment.class_traits()["preprocessors"].default()]

    # What students see in an answer cell.
    c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
    c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

    # Autograding does not go through nbgrader's Execute: autograder/core/grade.py runs the student's cells in a
    # sandboxed kernel and the tests in the grader, and pipeline.py records the scores in the gradebook.
    # `nbgrader autograde` and formgrader's Autograde button are routed there too (one_grader.py): one way to
    # grade, whatever starts it.
    one_grader.install()
    formgrader_notice.install()  # formgrader's pages say where their scores stand against the late policy

    # Feedback: hidden tests are removed, and only the grader's results are shown (no kernel outputs). The list at
    # the top names each graded cell by its exercise (ExerciseNames and the course's template, instead of nbgrader's
    # "Test cell"), and a line states the submission time against the deadline and any late penalty (LateNotice,
    # from the results JSON and policy.toml). The feedback's HTMLExporter (a child of GenerateFeedback, formgrader's
    # "generate feedback" included) sets the template's name ("feedback") but not this file, which extends it. Only
    # that exporter gets the file: formgrader renders its grading page with an HTMLExporter of its own (template
    # "formgrade"), which the feedback template would break.
    c.GenerateFeedback.preprocessors = [GetGrades, ResultsOnly, ClearHiddenTests, ExerciseNames, LateNotice,
                                        CSSHTMLHeaderPreprocessor]
    c.GenerateFeedback.HTMLExporter.template_file = str(TEMPLATES / "dlcourse_feedback.html.j2")
    c.LateNotice.results_dir = str(GRADING / "results")
    c.LateNotice.policy_file = os.environ.get("DLCOURSE_POLICY", str(AUTOGRADER / "policy.toml"))
    c.LateNotice.extensions_file = str(GRADING / "extensions.toml")
