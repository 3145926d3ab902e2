"""Reference building blocks that later chapters reuse, and the weight layouts that connect them to Hugging Face.

* :mod:`dlcourse.models.attention` — chapter 02's multi-head attention block (same parameters, same call),
  running on PyTorch's fused attention kernel;
* :mod:`dlcourse.models.vit` — the Vision Transformer's parameter names in the course's layout, and a
  Hugging Face ViT module seen through that layout (the oracle of chapter 06).
"""

from dlcourse.models.attention import MultiHeadAttention

__all__ = ["MultiHeadAttention"]
