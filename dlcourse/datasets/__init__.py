"""The data sets several chapters share, each read offline (bundled in ``data/`` or shipped in a registry package).

* :mod:`~dlcourse.datasets.tasks` — synthetic sequence tasks small models learn in seconds (chapters 01, 02);
* :mod:`~dlcourse.datasets.dates` — human-written dates to ISO 8601 (chapters 01, 02, 05);
* :mod:`~dlcourse.datasets.shakespeare` — the plays as plain text (chapters 03, 04, 05);
* :mod:`~dlcourse.datasets.fashion` — the bundled Fashion-MNIST subset (chapters 06, 07, 08, 11).
"""
