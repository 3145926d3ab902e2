"""The grading side of the course, in three rooms; each may import only from the rooms below it.

``platforms/``
    Where the course meets the systems a class runs on: JupyterHub (``hub``), Gradescope (``gradescope``),
    formgrader (``one_grader``, ``formgrader_notice``) and nbgrader's configuration (``nbgrader_config``).
``bookkeeping/``
    The class's records and the course's pages: the pipeline a term runs (release, collect, grade, feedback,
    grades), exports to Canvas and Moodle, the roster and late policy, similarity and analytics reports, and
    the notebooks run for the HTML pages, the website and lecture copies.
``core/``
    The trusted grader: everything a submission passes through, from the sandbox and its kernels to the
    static checks and the hidden tests' oracles. A change here is a change to grading: re-run the hidden
    corpus of adversarial submissions before it lands.

Arrows run downward only — platforms → bookkeeping → core — and ``tests/test_rooms.py`` fails on any other.
At this folder's top are the files an instructor edits or nbgrader looks for: ``nbgrader_config.py`` (nbgrader
reads it from the folder it runs in), ``policy.toml`` (deadlines, late penalties) and ``roster.example.csv``;
the term's grading folders (``submitted/``, ``autograded/``, ``feedback/``, the gradebook) are made here too.

Modules import one another as ``autograder.<room>.<module>``, with the repository on ``sys.path``: scripts run
by path (``python autograder/bookkeeping/pipeline.py``) put it there themselves.
"""
