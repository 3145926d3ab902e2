"""Fashion-MNIST: the class-balanced subset bundled in ``data/fashion_mnist/`` (chapters 06–08 and 11).

Zalando's Fashion-MNIST (Xiao, Rasul & Vollgraf, 2017; MIT licence) has 60,000 training and 10,000 test
greyscale images of 28×28 pixels in ten classes. The course ships a seeded, class-balanced subset —
2,000 training and 500 test images per class — in the dataset's own format (gzipped IDX files), cut from
the original files that Debian's ``dataset-fashion-mnist`` package installs under
``/usr/share/datasets/fashion-mnist``. :func:`build_subset` is the script that made it:

    python -m dlcourse.datasets.fashion build /usr/share/datasets/fashion-mnist data/fashion_mnist

:func:`load` returns tensors; :func:`as_dataset` a Hugging Face ``datasets.Dataset``.
"""

from __future__ import annotations

import gzip
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from dlcourse.data import bundled

CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot")
SPLITS = ("train", "test")
# IDX magic numbers: 0x0000 0803 (unsigned bytes, 3 dimensions) for images, 0x0000 0801 for labels.
_MAGIC = {3: 0x0803, 1: 0x0801}
_ORIGINAL = {"train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
             "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")}


def read_idx(path: str | Path) -> np.ndarray:
    """An IDX file of unsigned bytes (gzipped or not) as a uint8 array of the shape its header gives."""
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    magic = int.from_bytes(raw[:4], "big")
    ndim = magic & 0xFF
    if magic >> 8 != 0x08 or ndim not in _MAGIC:
        raise ValueError(f"{path}: not an IDX file of unsigned bytes (magic {magic:#010x})")
    shape = tuple(int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(shape)):
        raise ValueError(f"{path}: header says {shape}, found {data.size} bytes")
    return data.reshape(shape)


def write_idx(path: str | Path, array: np.ndarray) -> None:
    """Write a uint8 array (1-D labels or 3-D images) as a gzipped IDX file, byte-for-byte reproducible."""
    array = np.ascontiguousarray(array, dtype=np.uint8)
    header = _MAGIC[array.ndim].to_bytes(4, "big") + b"".join(int(n).to_bytes(4, "big") for n in array.shape)
    Path(path).write_bytes(gzip.compress(header + array.tobytes(), compresslevel=9, mtime=0))


def balanced_indices(labels: np.ndarray, per_class: int, seed: int) -> np.ndarray:
    """``per_class`` indices of each class, drawn without replacement with a seeded generator, in sorted order."""
    rng = np.random.default_rng(seed)
    picked = [rng.choice(np.flatnonzero(labels == c), per_class, replace=False) for c in range(len(CLASSES))]
    return np.sort(np.concatenate(picked))


def build_subset(source: str | Path, out: str | Path, train_per_class: int = 2000, test_per_class: int = 500,
                 seed: int = 0) -> list[Path]:
    """Cut the bundled subset from the original IDX files in ``source``; returns the files written to ``out``."""
    source, out = Path(source), Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for split, per_class in (("train", train_per_class), ("test", test_per_class)):
        images_file, labels_file = _ORIGINAL[split]
        images, labels = read_idx(source / images_file), read_idx(source / labels_file)
        keep = balanced_indices(labels, per_class, seed)
        for kind, array in (("images", images[keep]), ("labels", labels[keep])):
            path = out / f"{split}-{kind}.idx.gz"
            write_idx(path, array)
            written.append(path)
    return written


@dataclass(frozen=True)
class Images:
    """One split: ``images`` float32 (N, 1, 28, 28) in [0, 1], ``labels`` int64 (N,)."""

    images: torch.Tensor
    labels: torch.Tensor

    def __len__(self) -> int:
        return len(self.labels)


def load(split: str = "train", limit: int | None = None) -> Images:
    """The bundled subset's ``"train"`` (20,000) or ``"test"`` (5,000) split, sha256-verified.

    ``limit`` keeps the first ``limit`` images (the files are ordered as in the original dataset, so the
    first images of a split are not sorted by class).
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    images = read_idx(bundled(f"fashion_mnist_{split}_images"))
    labels = read_idx(bundled(f"fashion_mnist_{split}_labels"))
    if limit is not None:
        images, labels = images[:limit], labels[:limit]
    x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)  # (N, 28, 28) -> (N, 1, 28, 28)
    return Images(x, torch.from_numpy(labels.astype(np.int64)))


def as_dataset(split: str = "train"):
    """The split as a ``datasets.Dataset`` with columns ``image`` (28×28 uint8 lists) and ``label`` (ClassLabel)."""
    import datasets

    images = read_idx(bundled(f"fashion_mnist_{split}_images"))
    labels = read_idx(bundled(f"fashion_mnist_{split}_labels"))
    features = datasets.Features({"image": datasets.Array2D((28, 28), "uint8"),
                                  "label": datasets.ClassLabel(names=list(CLASSES))})
    return datasets.Dataset.from_dict({"image": images, "label": labels.astype(np.int64)}, features=features)


if __name__ == "__main__":  # python -m dlcourse.datasets.fashion build SOURCE OUT
    if len(sys.argv) != 4 or sys.argv[1] != "build":
        sys.exit("usage: python -m dlcourse.datasets.fashion build "
                 "/usr/share/datasets/fashion-mnist data/fashion_mnist")
    for written in build_subset(sys.argv[2], sys.argv[3]):
        print(written, written.stat().st_size)
