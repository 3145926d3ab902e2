"""Chapter 11, self-supervised learning.

* :mod:`~dlcourse.selfsup.train` — the encoder, the projection head, the crops, the pre-training loops, the probes;
* :mod:`~dlcourse.selfsup.widgets` — the positive-pair explorer;
* :mod:`~dlcourse.selfsup.diagrams` — SimCLR's pipeline.
"""
