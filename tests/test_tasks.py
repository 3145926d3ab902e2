"""Unit tests of the synthetic sequence tasks (dlcourse.datasets.tasks)."""

import pytest
import torch

from dlcourse.datasets import tasks


def test_reverse_batch_targets_are_the_reversed_real_symbols():
    batch = tasks.reverse_batch(64, 9, 7, torch.Generator().manual_seed(0), min_len=2)
    lengths = (~batch.padding).sum(1)
    assert int(lengths.min()) >= 2 and int(lengths.max()) <= 9
    for x, y, n in zip(batch.x, batch.y, lengths.tolist(), strict=True):
        assert x[:n].flip(0).tolist() == y[:n].tolist()
        assert (x[n:] == tasks.PAD).all() and (y[n:] == -100).all()
        assert int(x[:n].min()) >= 1 and int(x[:n].max()) <= 6


def test_delayed_recall_layout():
    batch = tasks.delayed_recall_batch(32, n_symbols=3, delay=5, vocab=8, generator=torch.Generator().manual_seed(1))
    assert batch.x.shape == batch.y.shape == (32, 11)
    assert not batch.padding.any()
    symbols = batch.x[:, :3]
    assert int(symbols.min()) >= 1 and int(symbols.max()) <= 8
    assert (batch.x[:, 3:7] == 9).all() and (batch.x[:, 7] == 10).all() and (batch.x[:, 8:] == 9).all()
    assert torch.equal(batch.y[:, -3:], symbols)  # written back in order after the cue
    assert (batch.y[:, :-3] == -100).all()
    # the same generator state gives the same batch; another seed another one
    again = tasks.delayed_recall_batch(32, 3, 5, 8, torch.Generator().manual_seed(1))
    other = tasks.delayed_recall_batch(32, 3, 5, 8, torch.Generator().manual_seed(2))
    assert torch.equal(again.x, batch.x) and not torch.equal(other.x, batch.x)


def test_delayed_recall_cue_is_last_delay_step_even_for_delay_one():
    batch = tasks.delayed_recall_batch(4, n_symbols=2, delay=1, vocab=5, generator=torch.Generator().manual_seed(0))
    assert (batch.x[:, 2] == 7).all() and (batch.x[:, 3:] == 6).all()


@pytest.mark.parametrize("args", [(0, 5, 8), (3, 0, 8), (3, 5, 1)])
def test_delayed_recall_rejects_bad_sizes(args):
    with pytest.raises(ValueError, match="need"):
        tasks.delayed_recall_batch(4, *args, generator=torch.Generator())


def test_sequence_accuracy_ignores_ignored_positions():
    targets = torch.tensor([[1, 2, -100], [3, 4, 5]])
    assert tasks.sequence_accuracy(torch.tensor([[1, 2, 9], [3, 4, 0]]), targets) == 0.5
