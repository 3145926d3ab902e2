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
    static checks and the hidden tests' oracles (with its half inside the kernel, ``dlcourse/grading/``). A
    change here is a change to grading: ``core/__init__.py`` says what must pass before it lands.

Outside ``core/``, a few places also keep grading honest; change them with the same care:
``bookkeeping/course_preprocessors.py`` (the release marks which cells grading may skip, by ``core.needs``;
the feedback keeps the grader's results only, and nbgrader's ``ClearHiddenTests`` set in
``platforms/nbgrader_config.py`` removes the hidden tests), ``bookkeeping/pipeline.py`` (what reaches the
gradebook), ``platforms/hub.py`` (``lock``: the repository closed to students) and ``platforms/gradescope.py``
(``lock_down`` and ``choose_sandbox``: the grader's files closed to the kernel, and which sandbox it gets).

Arrows run downward only — platforms → bookkeeping → core — and ``tests/test_rooms.py`` fails on any other.
At this folder's top are the files an instructor edits or nbgrader looks for: ``nbgrader_config.py`` (nbgrader
reads it from the folder it runs in), ``policy.toml`` (deadlines, late penalties) and ``roster.example.csv``;
the term's grading folders (``submitted/``, ``autograded/``, ``feedback/``, the gradebook) are made here too.

Modules import one another as ``autograder.<room>.<module>``, with the repository on ``sys.path``: scripts run
by path (``python autograder/bookkeeping/pipeline.py``) put it there themselves.
"""
