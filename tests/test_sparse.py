"""dlcourse.sparse.measure: the allocation guard, measured peak memory, the band layout; the long-range task."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from dlcourse import checks
from dlcourse.grading import agent, guards
from dlcourse.sparse import longrange, widgets
from dlcourse.sparse import measure as sparse


def test_allocation_limit_refuses_a_dense_score_matrix_however_it_is_made():
    q = torch.randn(64, 8)
    with sparse.allocation_limit(64 * 64 - 1, "no n × n tensor"):
        with pytest.raises(checks.ForbiddenCall, match=r"\(64, 64\).*no n × n tensor"):
            q @ q.T
        with pytest.raises(checks.ForbiddenCall):
            torch.ones(64, 64, dtype=torch.bool)  # a dense mask is as large
        with pytest.raises(checks.ForbiddenCall):
            F.scaled_dot_product_attention(q[None], q[None], q[None])


def test_allocation_limit_lets_views_and_small_tensors_through():
    q = torch.randn(64, 8)
    with sparse.allocation_limit(64 * 64 - 1):
        windows = F.pad(q, (0, 0, 2, 2)).unfold(0, 5, 1)  # (64, 8, 5), a view of the padded copy
        big_view = q[:, None, :].expand(64, 64, 8)  # 32,768 elements on paper, none allocated
        scores = (q[:, :, None] * windows).sum(1)
    assert scores.shape == (64, 5) and big_view.shape == (64, 64, 8)
    q @ q.T  # outside the block nothing is watched


def test_allocation_limit_travels_to_the_kernel_as_data():
    guards.set_trusted(True)
    try:
        with sparse.allocation_limit(100, "why"), checks.forbid(["softmax"]):
            sent = guards.active()
            torch.ones(20, 20)  # the grader itself is not limited: the guard is for the student's calls
    finally:
        guards.set_trusted(False)
    limit = "dlcourse.sparse.measure.allocation_limit"
    assert sent == [[limit, 100, "why"], ["dlcourse.checks.forbid", ["softmax"], ""]]
    with agent._guards([[limit, 100, "why"]]), pytest.raises(checks.ForbiddenCall):
        torch.ones(20, 20)


def test_peak_memory_sees_a_temporary_that_was_freed():
    """Measured in a fresh process: in a test worker, memory that earlier tests freed may still be resident
    and serve the temporary without raising the high-water mark (seen once: 0 bytes)."""
    import json
    import subprocess
    import sys

    code = ("import json, torch\nfrom dlcourse.sparse import measure as sparse\n"
            "p = sparse.peak_memory(lambda: float(torch.ones(4096, 4096).sum()))  # 64 MiB, gone on return\n"
            "print(json.dumps([p.value, p.bytes, p.how]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    value, measured, how = json.loads(done.stdout.strip().splitlines()[-1])
    assert value == 4096.0 * 4096
    if measured is None:
        pytest.skip(how)
    assert 60 * 2**20 <= measured <= 100 * 2**20, (measured, how)


def test_band_layout_round_trip_and_edges():
    dense = torch.arange(36.0).reshape(6, 6)
    band = sparse.dense_to_band(dense, 2, fill=-1.0)
    assert band.shape == (6, 5)
    assert band[0].tolist() == [-1.0, -1.0, 0.0, 1.0, 2.0]  # row 0: keys -2, -1 do not exist
    assert band[3].tolist() == [19.0, 20.0, 21.0, 22.0, 23.0]
    back = sparse.band_to_dense(band)
    near = (torch.arange(6)[:, None] - torch.arange(6)).abs() <= 2
    assert torch.equal(back, torch.where(near, dense, 0.0))
    batched = torch.randn(2, 3, 7, 7)
    assert torch.equal(sparse.band_to_dense(sparse.dense_to_band(batched, 7)), batched)  # w ≥ n: everything


def test_signal_task_places_one_signal_and_labels_it():
    tokens, labels = longrange.signal_batch(50, 40, 4, 10, torch.Generator().manual_seed(0))
    assert tokens.shape == (50, 40) and (tokens[:, 0] == longrange.CLS).all()
    is_signal = (tokens >= 1) & (tokens <= 4)
    assert (is_signal.sum(1) == 1).all()
    assert torch.equal(tokens[is_signal] - 1, labels)
    assert int(tokens.max()) < longrange.vocab_size(4, 10)


def test_classifier_reads_position_zero_and_accuracy_counts():
    class Mix(torch.nn.Module):  # global position g gets the mean of everything, the rest keep themselves
        def forward(self, x, global_idx):
            out = torch.zeros_like(x)
            out[:, global_idx] = x.mean(1, keepdim=True)
            return out

    torch.manual_seed(0)
    model = longrange.LongRangeClassifier(15, 12, 8, 1, 4, Mix)
    tokens, labels = longrange.signal_batch(64, 12, 4, 10, torch.Generator().manual_seed(1))
    logits = model(tokens, torch.tensor([0]))
    assert logits.shape == (64, 4)
    right = float((logits.argmax(-1) == labels).float().mean())
    assert longrange.accuracy(model, tokens, labels, torch.tensor([0]), batch=10) == right


def test_attention_costs_measure_each_method_and_length():
    rows = sparse.attention_costs({"dense": lambda q, k, v: sparse.dense_attention(
        q, k, v, torch.ones(q.shape[-2], q.shape[-2], dtype=torch.bool))}, [256, 1024], d=8)
    assert [(r["method"], r["n"]) for r in rows] == [("dense", 256), ("dense", 1024)]
    assert all(r["seconds"] > 0 for r in rows)
    q, k, v = torch.randn(3, 1, 2, 10, 4).unbind(0)
    allowed = torch.rand(10, 10) < 0.5
    allowed[:, 0] = True
    checks.assert_close(sparse.dense_attention(q, k, v, allowed), F.scaled_dot_product_attention(q, k, v, allowed),
                        tol=checks.Tolerance(rtol=1e-5, atol=1e-6))


def test_pattern_state_and_designer_use_the_given_functions():
    def build(n, window, dilation, n_global, n_random, block, seed):
        i = torch.arange(n)
        return (i[:, None] - i[None, :]).abs() <= window

    def reach(mask, layers):
        return torch.linalg.matrix_power(mask.float(), layers) > 0

    state = widgets.pattern_state(build, reach, 32, 2, 1, 0, 0, 8, 3)
    assert state.pairs == int(build(32, 2, 1, 0, 0, 8, 0).sum()) and state.dense_pairs == 1024
    assert state.reach_of(16) == 13  # |i - j| <= 6
    with pytest.raises(ValueError):
        widgets.pattern_state(lambda *a: torch.ones(3, 3), reach, 32, 2, 1, 0, 0, 8, 3)
    import matplotlib.pyplot as plt

    fig = widgets.draw_pattern(state)
    assert len(fig.axes) == 3
    plt.close(fig)
    fig = widgets.draw_masks({"a": build(8, 1, 1, 0, 0, 1, 0), "b": build(8, 2, 1, 0, 0, 1, 0)}, columns=2)
    assert len(fig.axes) == 2
    plt.close(fig)
    designer = widgets.pattern_designer(build, reach, n=32)
    designer.controls["window"].value = 5
    assert designer.last_values["window"] == 5 and designer.renders == 2


def test_the_designer_greys_out_the_block_size_while_there_are_no_random_blocks():
    def build(n, window, dilation, n_global, n_random, block, seed):  # random blocks of `block` keys
        i = torch.arange(n)
        mask = (i[:, None] - i[None, :]).abs() <= window
        mask[:, :block * n_random] = True
        return mask

    designer = widgets.pattern_designer(build, lambda mask, layers: mask, n=32)
    assert designer.controls["block"].disabled  # n_random = 0: the block size changes nothing
    designer.controls["n_random"].value = 1
    assert not designer.controls["block"].disabled
    designer.controls["n_random"].value = 0
    assert designer.controls["block"].disabled and not designer.controls["window"].disabled


def test_the_designer_view_updates_its_figure_in_place():
    import matplotlib.pyplot as plt

    from dlcourse.sparse import widgets as wsparse

    def build(n, window, dilation, n_global, n_random, block, seed):
        i = torch.arange(n)
        return (i[:, None] - i[None, :]).abs() <= window

    def reach(mask, layers):
        return torch.linalg.matrix_power(mask.float(), layers) > 0

    view = wsparse.pattern_view()
    first = view.show(widgets.pattern_state(build, reach, 32, 2, 1, 0, 0, 8, 1))
    wider = widgets.pattern_state(build, reach, 32, 5, 1, 0, 0, 8, 2)
    again = view.show(wider)
    assert again is first
    assert (again.axes[0].images[0].get_array() == wider.mask.numpy()).all()
    assert (again.axes[1].images[0].get_array() == wider.reach.numpy()).all()
    assert again.axes[2].patches[1].get_height() == wider.pairs
    assert again.axes[1].get_title().startswith("after 2 layer(s)")
    assert view.show(widgets.pattern_state(build, reach, 16, 2, 1, 0, 0, 8, 1)) is not first  # another n
    plt.close("all")
