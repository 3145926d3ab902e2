"""nbgrader configuration of the course (the pipeline runs nbgrader from this folder).

nbgrader's steps map onto the repository: source → solutions/, release → course/, and the instructor's
submitted/, autograded/ and feedback/ folders plus the gradebook live here, in autograder/, uncommitted.
"""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from course_preprocessors import ConciseErrors, StderrToStdout, SubmissionGuard  # noqa: E402
from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor  # noqa: E402
from nbgrader.preprocessors import (  # noqa: E402
    AssignLatePenalties,
    CheckCellMetadata,
    ClearHiddenTests,
    Execute,
    GetGrades,
    IgnorePattern,
    LimitOutput,
    SaveAutoGrades,
)

c = get_config()  # noqa: F821

c.CourseDirectory.course_id = "dlcourse"
c.CourseDirectory.root = str(HERE.parent)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "course"
# DLCOURSE_GRADING_DIR moves submitted/, autograded/, feedback/ and the gradebook elsewhere (the test
# suite grades in a temporary folder); DLCOURSE_GRADEBOOK overrides the gradebook alone.
GRADING = Path(os.environ.get("DLCOURSE_GRADING_DIR", str(HERE))).resolve()
c.CourseDirectory.submitted_directory = str(GRADING / "submitted")
c.CourseDirectory.autograded_directory = str(GRADING / "autograded")
c.CourseDirectory.feedback_directory = str(GRADING / "feedback")
c.CourseDirectory.db_url = os.environ.get("DLCOURSE_GRADEBOOK", f"sqlite:///{GRADING / 'gradebook.db'}")
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "*.egg-info", ".DS_Store"]

# What students see in an answer cell.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# Autograding: a per-cell timeout; stderr noise (warnings, progress bars) is moved to stdout before the
# grades are read, because nbgrader scores any test cell with stderr output 0.
c.Execute.timeout = int(os.environ.get("DLCOURSE_CELL_TIMEOUT", "300"))
c.Execute.interrupt_on_timeout = True
# The pipeline sets DLCOURSE_GRADING_KERNEL=dlcourse-grading when the bubblewrap sandbox works here
# (autograder/sandbox_kernel.py): the student's code then cannot read solutions/ or the gradebook.
c.Execute.kernel_name = os.environ.get("DLCOURSE_GRADING_KERNEL", "")
# Cells that rewire torch or the checks are not run (SubmissionGuard).
c.Autograde.autograde_preprocessors = [
    SubmissionGuard,
    Execute,
    StderrToStdout,
    IgnorePattern,
    ClearMetadataPreprocessor,
    LimitOutput,
    SaveAutoGrades,
    AssignLatePenalties,
    CheckCellMetadata,
]

# Feedback: hidden tests are removed before the HTML is written, and failing test cells show the error
# message without the traceback (which would quote hidden test code).
c.GenerateFeedback.preprocessors = [GetGrades, ConciseErrors, ClearHiddenTests, CSSHTMLHeaderPreprocessor]
