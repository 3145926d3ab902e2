"""Chapter 09, sparse attention.

* :mod:`~dlcourse.sparse.measure` — the allocation guard of the banded exercise, measured peak memory and time,
  dense attention as the baseline, the band layout;
* :mod:`~dlcourse.sparse.longrange` — a task where long range matters, and its small classifier;
* :mod:`~dlcourse.sparse.widgets` — attention patterns as masks, and the pattern designer;
* :mod:`~dlcourse.sparse.diagrams` — BigBird's block-sparse attention.
"""
