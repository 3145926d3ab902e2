"""Unit tests of runtime, data, training, widgets and assets."""

import json
import math
import time

import pytest
import torch

from dlcourse import assets, data, runtime, training, widgets
from dlcourse.welcome import widgets as welcome_widgets


@pytest.mark.parametrize(("env", "expected"), [
    ({}, False),
    ({"DLCOURSE_FAST": "1"}, True),
    ({"NBGRADER_EXECUTION": "autograde"}, True),
    ({"NBGRADER_EXECUTION": "autograde", "DLCOURSE_FAST": "0"}, False),
    ({"DLCOURSE_FAST": "yes"}, True),
    ({"DLCOURSE_LECTURE": "1"}, True),  # a lecture copy runs FAST budgets...
    ({"DLCOURSE_LECTURE": "1", "DLCOURSE_FAST": "0"}, False),  # ...unless told otherwise
])
def test_fast_switch(monkeypatch, env, expected):
    for name in ("DLCOURSE_FAST", "NBGRADER_EXECUTION", "DLCOURSE_LECTURE"):
        monkeypatch.delenv(name, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert runtime.is_fast() is expected
    assert runtime.budget(100, 3) == (3 if expected else 100)


@pytest.mark.parametrize(("env", "switch", "retrains", "trains", "loads"), [
    ({}, False, False, False, True),  # full mode: load the shipped checkpoint
    ({}, True, True, True, False),  # the notebook's RETRAIN switch
    ({"DLCOURSE_RETRAIN": "1"}, False, True, True, False),
    ({"DLCOURSE_RETRAIN": "0"}, False, False, False, True),
    ({"DLCOURSE_SAVE_CHECKPOINTS": "1"}, False, True, True, False),  # make checkpoints
    ({"DLCOURSE_FAST": "1"}, False, False, True, True),  # FAST mode trains for seconds, then loads
    ({"DLCOURSE_FAST": "1", "DLCOURSE_RETRAIN": "1"}, False, True, True, True),  # still only seconds of training
    ({"DLCOURSE_LECTURE": "1"}, False, False, False, True),  # a lecture trains nothing: the shipped result
    ({"DLCOURSE_LECTURE": "1"}, True, True, True, True),  # unless the cell's switch asks for it live
])
def test_retrain_switch(monkeypatch, env, switch, retrains, trains, loads):
    for name in ("DLCOURSE_FAST", "NBGRADER_EXECUTION", "DLCOURSE_RETRAIN", "DLCOURSE_SAVE_CHECKPOINTS",
                 "DLCOURSE_LECTURE"):
        monkeypatch.delenv(name, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert runtime.retraining(switch) is retrains
    assert runtime.trains(switch) is trains
    assert runtime.loads_shipped(switch) is loads


@pytest.mark.parametrize(("env", "switch", "runs"), [
    ({}, False, True),  # outside a lecture every demo runs
    ({"DLCOURSE_FAST": "1"}, False, True),
    ({"DLCOURSE_LECTURE": "1"}, False, False),  # a lecture shows the recorded result...
    ({"DLCOURSE_LECTURE": "1"}, True, True),  # ...or runs it when the cell's switch is on
    ({"DLCOURSE_LECTURE": "0"}, False, True),
])
def test_live_switch(monkeypatch, env, switch, runs):
    monkeypatch.delenv("DLCOURSE_LECTURE", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert runtime.live(switch) is runs


def test_device_choice(monkeypatch):
    monkeypatch.delenv("DLCOURSE_DEVICE", raising=False)
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    if not torch.cuda.is_available() and runtime._mps_available():
        expected = "mps"
    assert runtime.get_device().type == expected
    assert runtime.get_device("cpu").type == "cpu"
    monkeypatch.setenv("DLCOURSE_DEVICE", "cpu")
    assert runtime.get_device().type == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA was requested"):
            runtime.get_device("cuda")


def test_seed_everything_reproduces():
    runtime.seed_everything(3)
    a = torch.randn(4)
    gen = runtime.seed_everything(3)
    assert torch.equal(a, torch.randn(4))
    assert torch.equal(torch.randn(2, generator=gen), torch.randn(2, generator=torch.Generator().manual_seed(3)))


def test_a_seed_shift_moves_training_seeds_and_nothing_else(monkeypatch):
    x = torch.arange(12.0).unsqueeze(1)
    base = [b[0].flatten().tolist() for b, _ in zip(training.minibatches(x, batch_size=4), range(3), strict=False)]
    split = data.digits(test_fraction=0.25, seed=0).y_test
    monkeypatch.setenv("DLCOURSE_SEED", "1")
    assert runtime.shifted(5) == 6
    runtime.seed_everything(3)
    assert torch.equal(torch.randn(3), torch.randn(3, generator=torch.Generator().manual_seed(4)))
    moved = [b[0].flatten().tolist() for b, _ in zip(training.minibatches(x, batch_size=4), range(3), strict=False)]
    assert moved != base and sorted(sum(moved, [])) == sorted(sum(base, []))  # another order of the same data
    assert torch.equal(data.digits(test_fraction=0.25, seed=0).y_test, split)  # the held-out split stays put
    monkeypatch.setenv("DLCOURSE_SEED", "one")
    with pytest.raises(ValueError, match="DLCOURSE_SEED must be an integer"):
        runtime.shifted(0)


def test_environment_report_has_the_essentials():
    report = runtime.environment_report()
    for key in ("python", "torch", "device", "cpu threads (torch)", "FAST mode", "gpu", "nbgrader"):
        assert key in report and isinstance(report[key], str)


def test_digits_split_is_disjoint_seeded_and_scaled():
    s = data.digits(test_fraction=0.25, seed=0)
    assert s.x_train.shape[1] == 64 and s.x_train.dtype == torch.float32 and s.y_train.dtype == torch.int64
    assert len(s.x_train) + len(s.x_test) == 1797 and len(s.x_test) == 449
    assert 0.0 <= float(s.x_train.min()) and float(s.x_train.max()) <= 1.0
    again = data.digits(test_fraction=0.25, seed=0)
    assert torch.equal(s.y_test, again.y_test)
    assert not torch.equal(s.y_test, data.digits(test_fraction=0.25, seed=1).y_test)


def test_bundled_files_match_the_manifest():
    for name in data.manifest():
        assert data.bundled(name).exists()
    with pytest.raises(KeyError, match="no bundled file"):
        data.bundled("no-such-file")


def test_training_loop_learns_and_records_history():
    torch.manual_seed(0)
    x = torch.randn(256, 2)
    y = (x[:, 0] > x[:, 1]).long()
    model = torch.nn.Linear(2, 2)
    hist = training.train(model, lambda m, b: torch.nn.functional.cross_entropy(m(b[0]), b[1]),
                          training.minibatches(x, y, batch_size=32), torch.optim.SGD(model.parameters(), lr=0.5),
                          steps=200, evaluate=lambda m: (m(x).argmax(-1) == y).float().mean().item(),
                          eval_every=50, live_plot=False)
    assert len(hist.loss) == 200 and [s for s, _ in hist.evals] == [50, 100, 150, 200]
    assert hist.last_eval > 0.95 and hist.loss[-1] < hist.loss[0]
    fig = training.LiveLossPlot().figure(hist)
    assert len(fig.axes) == 2


def test_training_stops_on_a_non_finite_loss():
    model = torch.nn.Linear(1, 1)
    with pytest.raises(FloatingPointError, match="lower the learning rate"):
        training.train(model, lambda m, b: m(b[0]).sum() * math.inf, training.minibatches(torch.ones(4, 1),
                       batch_size=2), torch.optim.SGD(model.parameters(), lr=0.1), steps=3, live_plot=False)


def test_a_final_evaluation_replaces_the_last_one_and_is_not_timed():
    seen = []
    model = torch.nn.Linear(1, 1)
    hist = training.train(model, lambda m, b: m(b[0]).pow(2).sum(), iter(lambda: (torch.ones(2, 1),), None),
                          torch.optim.SGD(model.parameters(), lr=0.1), steps=4, eval_every=2, live_plot=False,
                          evaluate=lambda m: seen.append("quick") or 1.0,
                          final_evaluate=lambda m: (seen.append("thorough"), time.sleep(0.3))[0] or 0.5)
    assert seen == ["quick", "thorough"] and hist.evals == [(2, 1.0), (4, 0.5)] and hist.last_eval == 0.5
    assert hist.seconds < 0.3


def test_the_live_plot_redraws_at_most_every_two_seconds_and_always_shows_the_end(monkeypatch):
    """A run of a few milliseconds asks for a redraw at every step but is drawn once, at its end, with every loss
    and the final evaluation in the picture; a plot allowed to redraw at once redraws every time it is asked."""
    import IPython.display

    shown = []

    class Handle:
        def update(self, fig):
            shown.append(fig)

    monkeypatch.setattr(training, "in_notebook", lambda: True)
    monkeypatch.setattr(IPython.display, "display", lambda fig, display_id: shown.append(fig) or Handle())
    model = torch.nn.Linear(1, 1)
    hist = training.train(model, lambda m, b: m(b[0]).pow(2).sum(), iter(lambda: (torch.ones(2, 1),), None),
                          torch.optim.SGD(model.parameters(), lr=0.01), steps=20, plot_every=1, eval_every=5,
                          evaluate=lambda m: 1.0, final_evaluate=lambda m: 0.5)
    assert len(shown) == 1, f"{len(shown)} redraws of a run far shorter than 2 s"
    (line,) = shown[0].axes[0].lines
    assert len(line.get_ydata()) == 20 and list(shown[0].axes[1].lines[0].get_ydata())[-1] == 0.5
    assert hist.last_eval == 0.5
    eager = training.LiveLossPlot(redraw_seconds=0)
    for _ in range(3):
        eager.update(hist)
    assert eager.redraws == 3 and len(shown) == 4
    patient = training.LiveLossPlot(redraw_seconds=3600)
    patient.update(hist)
    patient.update(hist, final=True)
    assert patient.redraws == 1 and len(shown) == 5


def test_clipping_bounds_the_update_and_the_run_is_recorded(tmp_path, monkeypatch):
    """With clip_grad_norm=c, one SGD step of lr 1 moves the weights by at most c (by exactly c when the
    gradient is larger); the run lands in $DLCOURSE_RUN_LOG with its throughput."""
    log = tmp_path / "runs.jsonl"
    monkeypatch.setenv(training.RUN_LOG, str(log))
    for clip, expected in ((0.5, 0.5), (None, 1000 * math.sqrt(2))):
        model = torch.nn.Linear(2, 1, bias=False)
        before = model.weight.detach().clone()
        training.train(model, lambda m, b: 1000 * m(b[0]).sum(), iter(lambda: (torch.ones(1, 2),), None),
                       torch.optim.SGD(model.parameters(), lr=1.0), steps=1, live_plot=False, clip_grad_norm=clip,
                       items_per_step=10, title=f"clip {clip}", evaluate=lambda m: 0.25)
        moved = (model.weight.detach() - before).norm().item()
        assert moved == pytest.approx(expected, rel=1e-5), (clip, moved)
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["run"] for r in runs] == ["clip 0.5", "clip None"]
    assert runs[0]["steps"] == 1 and runs[0]["value"] == 0.25 and runs[0]["tokens_per_s"] > 0
    with pytest.raises(ValueError, match="clip_grad_norm"):
        training.train(model, lambda m, b: m(b[0]).sum(), iter(lambda: (torch.ones(1, 2),), None),
                       torch.optim.SGD(model.parameters(), lr=1.0), steps=1, live_plot=False, clip_grad_norm=0)


def test_temperature_state_limits():
    logits = [2.0, 1.0, 0.0]
    sharp = welcome_widgets.temperature_state(logits, 0.01)
    flat = welcome_widgets.temperature_state(logits, 1000.0)
    assert sharp.top == 0 and sharp.entropy_bits < 1e-3
    assert abs(flat.entropy_bits - math.log2(3)) < 1e-3
    mid = welcome_widgets.temperature_state(logits, 1.0)
    assert torch.allclose(mid.probs, torch.softmax(torch.tensor(logits, dtype=torch.float64), -1))
    custom = welcome_widgets.temperature_state(logits, 1.0, softmax_fn=lambda z: torch.ones(3) / 3)
    assert abs(custom.entropy_bits - math.log2(3)) < 1e-6  # float32 thirds
    with pytest.raises(ValueError, match="temperature must be positive"):
        welcome_widgets.temperature_state(logits, 0.0)


def test_temperature_widget_redraws_on_slider_change():
    view = welcome_widgets.softmax_temperature([1.0, 0.0], ["a", "b"])
    assert view.renders == 1 and view.last_values == {"temperature": 1.0}
    view.controls["temperature"].value = 0.1
    assert view.renders == 2 and view.last_values == {"temperature": 0.1}
    with pytest.raises(ValueError, match="2 labels for 3 logits"):
        welcome_widgets.softmax_temperature([1.0, 0.0, 2.0], ["a", "b"])


def test_asset_problems_and_model_dir(tmp_path):
    asset = assets.ASSETS["all-minilm-l6-v2"]
    assert any("missing" in p for p in assets.problems(asset, tmp_path))
    with pytest.raises(assets.AssetError, match="make setup"):
        assets.model_dir("all-minilm-l6-v2", tmp_path)
    with pytest.raises(KeyError):
        assets.model_dir("nope")
    (tmp_path / asset.name).mkdir()
    for inner in asset.files:
        (tmp_path / asset.name / inner.split("/")[-1]).write_bytes(b"wrong")
    assert all("does not match" in p for p in assets.problems(asset, tmp_path))


def test_fetched_models_are_verified():
    """`make setup` fetched both models; their files match the pinned sha256."""
    for name, asset in assets.ASSETS.items():
        assert assets.problems(asset) == [], name
        assert assets.model_dir(name).is_dir()


def test_best_time_is_the_fastest_run():
    pauses = iter([0.03, 0.001, 0.02])
    calls = []

    def work():
        import time

        calls.append(1)
        time.sleep(next(pauses))

    best = runtime.best_time(work, repeats=3)
    assert len(calls) == 3 and 0.001 <= best < 0.015


def test_a_kept_figure_is_drawn_once_then_updated_and_shown_without_a_second_layout_pass():
    import matplotlib.pyplot as plt

    from dlcourse.widgets import base

    built = []

    def draw(state):
        built.append(state)
        fig, ax = plt.subplots(figsize=(3, 2), dpi=50)
        ax.plot([0, 1], [0, state])
        return fig

    def update(fig, state):
        fig.axes[0].lines[0].set_ydata([0, state])

    view = base.KeptFigure(draw, update, key=lambda state: state > 10)
    fig = view.show(1)
    assert view.show(2) is fig and built == [1] and list(fig.axes[0].lines[0].get_ydata()) == [0, 2]
    assert view.show(11) is not fig and built == [1, 11]  # another key: built again
    assert getattr(view.figure, base.FIXED_LAYOUT, False)
    png = base.as_png(view.figure).data
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(png[16:20], "big") == 150 and int.from_bytes(png[20:24], "big") == 100  # 3 × 2 in at 50 dpi
    plt.close("all")


def test_every_view_keeps_labels_whole_and_sliders_wide_enough():
    """A lecture screen shows "temperature", not "temperat…"; a slider has room for its range; controls
    wrap to a new row instead of being squeezed (the same look in every chapter)."""
    import ipywidgets as W

    from dlcourse.widgets.base import InteractiveView

    controls = {"temperature": W.FloatLogSlider(value=1.0, base=10, min=-1, max=1, description="temperature"),
                "steps": W.IntSlider(value=3, min=1, max=9, description="n-gram block (0 = off)",
                                     layout=W.Layout(width="300px")),
                "prompt": W.Text(value="x", description="continue the prompt")}
    view = InteractiveView(controls, lambda **values: "<b>ok</b>")
    assert all(c.style.description_width == "initial" for c in controls.values())
    assert controls["temperature"].layout.width == "420px"
    assert controls["steps"].layout.width == "300px"  # a width chosen by the widget is kept
    assert view.children[0].layout.flex_flow == "row wrap"
    assert widgets.base.legible(W.Button(description="continue the prompt")).layout.width == "auto"


def test_heatmaps_are_sized_to_their_content_and_name_heads_only_when_there_are_several():
    from dlcourse.attention import AttentionMap
    from dlcourse.widgets.attention import draw_heatmap, heatmap_size, heatmap_state

    width, height = heatmap_size(10, 29)  # a 29-character date against its 10-character answer
    assert width > 2 * height and height * 100 < 600  # wide and short at 100 dpi, not a 1,000-pixel square
    assert heatmap_size(200, 200)[0] <= 12 and heatmap_size(200, 200)[1] <= 9
    one_head = AttentionMap("alignment", torch.full((1, 1, 2, 3), 1 / 3), None, None)
    assert heatmap_state(one_head, 0, ["a", "b"], ["x", "y", "z"]).title == "alignment"
    four = AttentionMap("layer 1", torch.full((1, 4, 2, 3), 1 / 3), None, None)
    state = heatmap_state(four, 2, ["a", "b"], ["x", "y", "z"])
    assert state.title == "layer 1 · head 2"
    fig = draw_heatmap(state)
    assert fig.get_figwidth() > fig.get_figheight()
