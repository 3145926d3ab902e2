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
A change here changes grading: re-run the hidden corpus of adversarial submissions before it lands.
"""
