"""The class's records and the course's pages, built on the trusted grader.

``pipeline`` runs a term's steps (release, zip-collect, autograde, feedback, grades, the student bundle)
through nbgrader and ``autograder.core``; ``export`` writes the gradebook for Canvas and Moodle, with the
``roster``, the late ``policy`` and LMS file names (``lms_names``); ``course_preprocessors`` are nbgrader's
steps for the release and the feedback; ``similarity`` and ``analytics`` are the reports across a class.
The course's pages: ``render`` (``make html``), ``website`` (``make site``), ``lecture`` (lecture copies),
``kernels`` (notebooks run top to bottom), ``offline`` (the pinned scripts pages load without a network) and
``nbtext`` (a source notebook as text).

May import: the standard library, installed packages, ``dlcourse``, ``autograder.core`` and modules of this
room. Never ``autograder.platforms``.
"""
