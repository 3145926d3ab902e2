"""dlcourse.datasets.fashion: the bundled Fashion-MNIST subset, its IDX reader and writer, and how it was cut."""

from __future__ import annotations

import numpy as np
import pytest

from dlcourse.datasets import fashion


def test_idx_round_trip_is_exact_and_reproducible(tmp_path):
    images = np.random.default_rng(0).integers(0, 256, size=(5, 28, 28), dtype=np.uint8)
    labels = np.array([3, 1, 4, 1, 5], dtype=np.uint8)
    for name, array in (("i.idx.gz", images), ("l.idx.gz", labels)):
        fashion.write_idx(tmp_path / name, array)
        np.testing.assert_array_equal(fashion.read_idx(tmp_path / name), array)
        first = (tmp_path / name).read_bytes()
        fashion.write_idx(tmp_path / name, array)
        assert (tmp_path / name).read_bytes() == first  # no timestamp in the gzip header


def test_read_idx_refuses_a_file_that_is_not_idx_or_is_truncated(tmp_path):
    (tmp_path / "bad").write_bytes(b"\x00\x00\x0d\x03" + b"\x00" * 12)
    with pytest.raises(ValueError, match="not an IDX"):
        fashion.read_idx(tmp_path / "bad")
    fashion.write_idx(tmp_path / "ok", np.zeros((2, 3, 3), dtype=np.uint8))
    import gzip
    raw = gzip.decompress((tmp_path / "ok").read_bytes())
    (tmp_path / "short").write_bytes(raw[:-1])
    with pytest.raises(ValueError, match="header says"):
        fashion.read_idx(tmp_path / "short")


def test_balanced_indices_are_balanced_sorted_distinct_and_seeded():
    labels = np.repeat(np.arange(10), 30)[np.random.default_rng(1).permutation(300)]
    picked = fashion.balanced_indices(labels, 7, seed=0)
    assert np.bincount(labels[picked], minlength=10).tolist() == [7] * 10
    assert (np.diff(picked) > 0).all()
    np.testing.assert_array_equal(picked, fashion.balanced_indices(labels, 7, seed=0))
    assert not np.array_equal(picked, fashion.balanced_indices(labels, 7, seed=1))


def test_build_subset_cuts_the_same_bytes_from_the_originals(tmp_path):
    rng = np.random.default_rng(2)
    src = tmp_path / "src"
    src.mkdir()
    for split, n in (("train", 60), ("test", 40)):
        images_file, labels_file = fashion._ORIGINAL[split]
        fashion.write_idx(src / images_file, rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8))
        fashion.write_idx(src / labels_file, np.repeat(np.arange(10, dtype=np.uint8), n // 10))
    written = fashion.build_subset(src, tmp_path / "out", train_per_class=3, test_per_class=2)
    assert [p.name for p in written] == ["train-images.idx.gz", "train-labels.idx.gz", "test-images.idx.gz",
                                         "test-labels.idx.gz"]
    train_x, train_y = (fashion.read_idx(p) for p in written[:2])
    all_x = fashion.read_idx(src / "train-images-idx3-ubyte.gz")
    keep = fashion.balanced_indices(fashion.read_idx(src / "train-labels-idx1-ubyte.gz"), 3, seed=0)
    np.testing.assert_array_equal(train_x, all_x[keep])
    assert np.bincount(train_y).tolist() == [3] * 10


@pytest.mark.parametrize(("split", "n"), [("train", 20000), ("test", 5000)])
def test_the_bundled_subset_is_balanced_and_scaled(split, n):
    data = fashion.load(split)
    assert tuple(data.images.shape) == (n, 1, 28, 28) and len(data) == n
    assert data.labels.bincount().tolist() == [n // 10] * 10
    assert 0.0 == float(data.images.min()) and float(data.images.max()) == 1.0
    assert 0.2 < float(data.images.mean()) < 0.4  # Fashion-MNIST's mean pixel is about 0.29
    head = fashion.load(split, limit=10)
    assert tuple(head.images.shape) == (10, 1, 28, 28)
    assert head.labels.tolist() == data.labels[:10].tolist()


def test_train_and_test_images_do_not_overlap():
    train, test = fashion.load("train").images, fashion.load("test").images
    seen = {x.numpy().tobytes() for x in train}
    assert not any(x.numpy().tobytes() in seen for x in test)


def test_as_dataset_has_the_class_names_and_the_same_pixels():
    ds = fashion.as_dataset("test")
    assert len(ds) == 5000 and ds.features["label"].names == list(fashion.CLASSES)
    first = ds[0]
    tensors = fashion.load("test", limit=1)
    np.testing.assert_array_equal(np.asarray(first["image"], dtype=np.float32) / 255.0, tensors.images[0, 0].numpy())
    assert first["label"] == int(tensors.labels[0])
    with pytest.raises(ValueError):
        fashion.load("validation")
