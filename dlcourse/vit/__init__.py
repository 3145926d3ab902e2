"""Chapter 06, the Vision Transformer.

* :mod:`~dlcourse.vit.train` — image classifiers trained for a fixed time (the ViT-versus-CNN comparison; chapter
  07 reuses the CNN) and what a trained ViT learned;
* :mod:`~dlcourse.vit.model` — the ViT's parameter names, and Hugging Face's ViT through them (the oracle);
* :mod:`~dlcourse.vit.widgets` — the patch explorer, [CLS]-attention maps, position-embedding similarity;
* :mod:`~dlcourse.vit.diagrams` — the ViT's input pipeline.
"""
