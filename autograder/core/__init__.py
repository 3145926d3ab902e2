"""The trusted grader: everything a submission passes through on its way to a score.

``grade`` grades one submission: the student's cells run in a sandboxed kernel (``sandbox``, with kernels
forked from a warm process by ``forkserver`` or started ahead by ``warm``), only the cells the tests need
(``needs``), while the hidden tests run here, in the grader, against values fetched from the kernel
(``trusted``). Before anything runs, the answers' source is read for what they must not do: load code from
data or reach the grader (``flags``), rebind what the tests rely on (``rewiring``), or call the library an
exercise is checked against (``oracles``, declared in ``oracles.toml``). ``parallel`` grades many
submissions at once, on this machine or a Dask cluster. ``references/`` holds the reference implementations
some hidden tests compare with.

May import: the standard library, installed packages, ``dlcourse``, and modules of this room. Never
``autograder.bookkeeping`` or ``autograder.platforms``: the grader must not depend on how a class is run.

A change here changes grading, and so does one to the grader's half inside the kernel, ``dlcourse/grading/``
(the agent that answers the grader, the guards and integrity checks, the fork server's zygote). Before it
lands: the suites that hold the grader — ``tests/test_trusted.py`` with every route in ``tests/attacks.py``,
``test_guard``, ``test_oracles``, ``test_needs``, ``test_forkserver``, ``test_warm``, ``test_parallel``, the
planted wrong answers (``tests/mutants/``, ``test_notebooks``) and the students' typical mistakes
(``tests/mistakes/``, ``test_mistakes``) — and, before it grades a class, the hidden corpus of adversarial
submissions, which is kept outside the repository so that the grader is never tuned to it.
"""
