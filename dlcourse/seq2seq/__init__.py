"""Chapter 01, seq2seq with attention: :mod:`~dlcourse.seq2seq.widgets` holds the alignment viewer,
:mod:`~dlcourse.seq2seq.diagrams` the GRU encoder–decoder with attention, one decoder step in focus.

The chapter's data come from :mod:`dlcourse.datasets` (dates, the synthetic tasks).
"""
