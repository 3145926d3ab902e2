"""Chapter 02, Transformer blocks.

* :mod:`~dlcourse.transformer.model` — the chapter's multi-head attention as a reference block that later
  chapters (03, 05, 06) build on;
* :mod:`~dlcourse.transformer.widgets` — the attention explorer and the positional-encoding figure;
* :mod:`~dlcourse.transformer.diagrams` — the residual sub-layers, the encoder–decoder Transformer, the attention
  masks.
"""
