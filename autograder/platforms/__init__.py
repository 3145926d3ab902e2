"""Where the course meets the systems a class runs on.

``hub`` starts and feeds a JupyterHub with nbgrader's exchange; ``gradescope`` builds and runs a chapter's
Gradescope autograder; ``one_grader`` routes formgrader's and ``nbgrader autograde``'s grading to the course's
grader, and ``formgrader_notice`` puts the late policy on formgrader's pages; ``nbgrader_config`` is nbgrader's
configuration (``autograder/nbgrader_config.py`` calls it).

May import: anything below — ``autograder.bookkeeping``, ``autograder.core``, ``dlcourse`` — and modules of
this room. Nothing below imports from here.
"""
