"""Chapter 10, optimizers and schedulers.

* :mod:`~dlcourse.optim.train` — the 2-D valleys, the functional optimizer, the digits classifier and its loop;
* :mod:`~dlcourse.optim.widgets` — the optimizer playground and the schedule designer.
"""
