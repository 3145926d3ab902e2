"""Chapter 05, T5 and text-to-text.

* :mod:`~dlcourse.t5.train` — the character vocabulary, the pre-training objectives, the tasks, training,
  decoding and evaluation of a small T5;
* :mod:`~dlcourse.t5.model` — Hugging Face's T5 in the course's parameter names (the chapter's oracle);
* :mod:`~dlcourse.t5.widgets` — the span-corruption and attention-mask explorers, the cross-attention map;
* :mod:`~dlcourse.t5.diagrams` — T5's encoder–decoder.
"""
