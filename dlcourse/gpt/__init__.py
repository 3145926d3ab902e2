"""Chapter 04, GPT and decoding.

* :mod:`~dlcourse.gpt.lm` — the language-model output convention, tiny GPT-2 oracles, weight conversion,
  SmolLM2, the scaling-law fit (chapter 05 reuses the convention);
* :mod:`~dlcourse.gpt.muon` — Muon for the weight matrices and AdamW for the rest, the pretraining demo's
  optimizer;
* :mod:`~dlcourse.gpt.rotary` — rotary positions given to the student's GPT in place of its position table, the
  pretraining demo's positions;
* :mod:`~dlcourse.gpt.sampling` — the sampling explorer (the next-token distribution under the decoding knobs);
* :mod:`~dlcourse.gpt.beams` — the beam-search tree;
* :mod:`~dlcourse.gpt.diagrams` — the GPT stack.
"""
