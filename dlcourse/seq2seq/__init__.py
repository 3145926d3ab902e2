"""Chapter 01, seq2seq with attention: :mod:`~dlcourse.seq2seq.widgets` holds the alignment viewer.

The chapter's data come from :mod:`dlcourse.datasets` (dates, the synthetic tasks).
"""
