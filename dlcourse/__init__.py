"""Helper package of the course *Deep Learning from Scratch: attention, Transformers and generative models*.

Modules, one concept each:

* :mod:`dlcourse.runtime` — device, seeds, the FAST switch, environment report;
* :mod:`dlcourse.checks` — what test cells call: comparisons that say what is wrong, guards, oracles;
* :mod:`dlcourse.training` — a small training loop with progress bar and live loss plot;
* :mod:`dlcourse.widgets` — interactive views whose logic is plain, tested functions;
* :mod:`dlcourse.diagrams` — architecture figures drawn with matplotlib (seq2seq attention, residual
  sub-layers, the Transformer, GPT, attention masks);
* :mod:`dlcourse.data` — offline datasets; :mod:`dlcourse.assets` — verified pretrained model files;
* :mod:`dlcourse.dates`, :mod:`dlcourse.tasks`, :mod:`dlcourse.shakespeare`, :mod:`dlcourse.fashion` — the
  chapters' data;
* :mod:`dlcourse.models` — reference blocks later chapters reuse (chapter 02's attention; the ViT layout);
* :mod:`dlcourse.vision` — image classifiers trained for a fixed time (the ViT-vs-CNN comparison);
* :mod:`dlcourse.attention` — capturing attention weights; :mod:`dlcourse.lm` — language-model plumbing
  (the output convention, GPT-2 oracles and weight conversion, SmolLM2).
"""

__version__ = "0.1.0"
