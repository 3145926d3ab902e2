"""dlcourse.optim.train and the chapter 10 widgets: valleys, the functional optimizer, the shared training loop."""

from __future__ import annotations

import math
import warnings

import pytest
import torch

from dlcourse import checks, data
from dlcourse.optim import train as optim
from dlcourse.optim import widgets as wopt


def plain_sgd(param, grad, state, *, lr, momentum=0.0, nesterov=False):
    """A minimal update function for the tests (heavy-ball momentum, as torch.optim.SGD with dampening 0)."""
    new_state = dict(state)
    d = grad
    if momentum:
        buf = grad.clone() if "momentum_buffer" not in state else momentum * state["momentum_buffer"] + grad
        new_state["momentum_buffer"] = buf
        d = grad + momentum * buf if nesterov else buf
    return param - lr * d, new_state


def sign_step(param, grad, state, *, lr, betas=(0.9, 0.999)):
    """A stand-in for Adam in the widget tests: a step of size lr along the sign of the gradient."""
    return param - lr * grad.sign(), {"step": state.get("step", 0) + 1}


@pytest.mark.parametrize("name", list(optim.VALLEYS))
def test_valley_gradients_match_autograd_and_the_minimum_is_flat(name):
    v = optim.VALLEYS[name]
    for point in [v.start, (0.3, -0.7), (1.5, 2.0)]:
        xy = torch.tensor(point, dtype=torch.float64, requires_grad=True)
        (auto,) = torch.autograd.grad(v.f(xy), xy)
        checks.assert_close(v.grad(xy.detach()), auto, tol=checks.FLOAT64)
    checks.assert_close(v.grad(torch.tensor(v.minimum, dtype=torch.float64)), torch.zeros(2, dtype=torch.float64))
    assert float(v.f(torch.tensor(v.minimum))) == 0.0


def test_trajectory_converges_on_the_bowl_and_stops_when_it_diverges():
    path = optim.trajectory(plain_sgd, "bowl", 300, lr=0.05, momentum=0.5)
    assert path.shape == (301, 2) and path.dtype == torch.float64
    assert float(path[-1].norm()) < 1e-3
    checks.assert_close(path[0], torch.tensor(optim.VALLEYS["bowl"].start, dtype=torch.float64))
    diverged = optim.trajectory(plain_sgd, "bowl", 300, lr=0.2)  # 1 - 0.2 * 25 = -4: explodes across the valley
    assert 1 < len(diverged) < 30 and bool(torch.isfinite(diverged).all())


def test_functional_optimizer_matches_torch_sgd_under_a_scheduler_without_warnings():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    twin = torch.nn.Linear(4, 3)
    twin.load_state_dict(model.state_dict())
    mine = optim.FunctionalOptimizer(model.parameters(), plain_sgd, lr=0.1, momentum=0.9)
    ref = torch.optim.SGD(twin.parameters(), lr=0.1, momentum=0.9)
    schedules = [torch.optim.lr_scheduler.LambdaLR(o, lambda t: 1.0 / (1 + t)) for o in (mine, ref)]
    x = torch.randn(16, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(5):
            for m, o, s in ((model, mine, schedules[0]), (twin, ref, schedules[1])):
                o.zero_grad()
                m(x).pow(2).mean().backward()
                o.step()
                s.step()
    for a, b in zip(model.parameters(), twin.parameters(), strict=True):
        checks.assert_close(a, b)
    assert mine.param_groups[0]["lr"] == pytest.approx(0.1 / 6)
    assert optim.state_numel(mine) == sum(p.numel() for p in model.parameters())
    assert set(mine.state_dict()["state"][0]) == {"momentum_buffer"}


def test_functional_optimizer_needs_a_learning_rate_and_skips_parameters_without_gradients():
    with pytest.raises(TypeError):
        optim.FunctionalOptimizer([torch.nn.Parameter(torch.zeros(2))], plain_sgd)
    p = torch.nn.Parameter(torch.ones(2))
    opt = optim.FunctionalOptimizer([p], plain_sgd, lr=1.0)
    opt.step()
    checks.assert_close(p.detach(), torch.ones(2))
    assert optim.state_numel(opt) == 0


def test_fit_classifier_learns_digits_records_evaluations_and_stops_when_told():
    split = data.digits()
    torch.manual_seed(0)
    model = optim.mlp(depth=1, width=32)
    assert model(torch.zeros(2, 64)).shape == (2, 10)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    run = optim.fit_classifier(model, opt, split.x_train, split.y_train, split.x_test, split.y_test, 100,
                               eval_every=25, clip=lambda gs, c: ([g * 0.5 for g in gs], torch.tensor(0.0)))
    assert len(run.loss) == 100 and [s for s, _, _ in run.evals] == [25, 50, 75, 100]
    assert run.final_accuracy > 0.8 and run.loss[-1] < run.loss[0]
    assert run.lrs == [1e-2] * 100
    calls = []
    stopped = optim.fit_classifier(optim.mlp(1, 8), torch.optim.SGD(optim.mlp(1, 8).parameters(), lr=0.1),
                                   split.x_train, split.y_train, split.x_test, split.y_test, 100, eval_every=10,
                                   should_stop=lambda v: calls.append(v) or len(calls) == 3)
    assert stopped.stopped_at == 30 and len(stopped.evals) == 3


def test_smooth_is_a_running_mean():
    assert optim.smooth([1.0, 3.0, 5.0, 7.0], width=2) == [1.0, 2.0, 4.0, 6.0]


def test_playground_state_walks_every_optimizer_and_measures_distances():
    state = wopt.playground_state(plain_sgd, sign_step, "bowl", sgd_lr=0.03, adam_lr=0.05, momentum=0.9,
                                  beta1=0.9, beta2=0.999, steps=50)
    assert list(state.paths) == ["SGD", "momentum 0.9", "Nesterov 0.9", "Adam β=(0.9, 0.999)"]
    assert all(p.shape == (51, 2) for p in state.paths.values())
    dist = state.distances()
    assert dist["momentum 0.9"] < dist["SGD"]
    fig = wopt.draw_valley(state)
    assert len(fig.axes[0].lines) == 5  # the minimum and four paths
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_the_playground_view_moves_its_paths_in_place_and_rebuilds_for_a_new_valley():
    import matplotlib.pyplot as plt

    def state(valley, momentum):
        return wopt.playground_state(plain_sgd, sign_step, valley, sgd_lr=0.03, adam_lr=0.05, momentum=momentum,
                                     beta1=0.9, beta2=0.999, steps=30)

    view = wopt.valley_view()
    first = view.show(state("bowl", 0.9))
    slower = state("bowl", 0.5)
    again = view.show(slower)
    assert again is first  # updated, not rebuilt
    line = again.axes[0].lines[2]  # [0] is the minimum, [1] plain SGD, [2] momentum
    assert (line.get_xydata() == slower.paths["momentum 0.5"].numpy()).all()
    assert again.axes[0].get_legend().get_texts()[1].get_text().startswith("momentum 0.5: ")
    other = next(name for name in optim.VALLEYS if name != "bowl")
    rebuilt = view.show(state(other, 0.5))
    assert rebuilt is not first and optim.VALLEYS[other].name in rebuilt.axes[0].get_title()
    plt.close("all")


RUNS = {"steps": 10, "lr": 0.01, "runs": [
    {"shape": "linear", "warmup": 0.0, "cycles": 1.0, "loss": [2.0] * 10, "val_accuracy": 0.9},
    {"shape": "linear", "warmup": 0.2, "cycles": 1.0, "loss": [1.0] * 10, "val_accuracy": 0.95},
    {"shape": "triangular", "warmup": 0.0, "cycles": 2.0, "loss": [1.5] * 10, "val_accuracy": 0.93},
]}


def make(shape, warmup_steps, total_steps, cycles):
    return lambda t: min(1.0, (t + 1) / (warmup_steps + 1))


def test_schedule_state_evaluates_the_factory_and_picks_the_nearest_run():
    state = wopt.schedule_state(make, RUNS["runs"], "linear", 0.15, 20, 1.0)
    assert len(state.factors) == 20 and state.factors[0] == pytest.approx(1 / 4) and state.factors[-1] == 1.0
    assert state.run["warmup"] == 0.2
    assert wopt.schedule_state(make, RUNS["runs"], "cosine", 0.0, 5, 1.0).run is None
    assert wopt.nearest_run(RUNS["runs"], "triangular", 0.3, 4.0)["cycles"] == 2.0
    with pytest.raises(ValueError):
        wopt.schedule_state(make, RUNS["runs"], "exponential", 0.0, 5, 1.0)
    with pytest.raises(ValueError):
        wopt.schedule_state(make, RUNS["runs"], "linear", 1.0, 5, 1.0)


def test_widgets_redraw_when_a_control_changes():
    playground = wopt.optimizer_playground(plain_sgd, sign_step, steps=20)
    before = playground.renders
    playground.controls["momentum"].value = 0.5
    assert playground.renders == before + 1 and playground.last_values["momentum"] == 0.5
    designer = wopt.schedule_designer(make, RUNS)
    designer.controls["shape"].value = "triangular"
    assert designer.last_values["shape"] == "triangular" and designer.renders == 2


def test_the_schedule_designer_greys_out_a_knob_that_changes_nothing_for_the_shape():
    def make(shape, warmup_steps, total_steps, cycles):  # only the cosine shape has cycles
        if shape == "cosine":
            return lambda t: 0.5 * (1 + math.cos(math.pi * cycles * t / total_steps))
        return lambda t: min(1.0, (t + 1) / (warmup_steps + 1))

    designer = wopt.schedule_designer(make, RUNS)
    designer.controls["shape"].value = "linear"
    assert designer.controls["cycles"].disabled and not designer.controls["warmup"].disabled
    designer.controls["shape"].value = "cosine"
    assert not designer.controls["cycles"].disabled


def test_json_payloads_are_saved_with_their_metrics_and_verified(tmp_path, monkeypatch):
    monkeypatch.setattr(data, "DATA_DIR", tmp_path)
    monkeypatch.setattr(data, "MANIFEST", tmp_path / "manifest.json")
    data.save_json("runs", {"a": [1, 2]}, {"best": 0.5}, source="a test")
    assert data.load_json("runs") == {"a": [1, 2]}
    assert data.manifest()["runs"]["metrics"] == {"best": 0.5}
    data.add_metrics("runs", {"count": 3})  # measured later, with the saved file
    assert data.manifest()["runs"]["metrics"] == {"best": 0.5, "count": 3}
    assert data.load_json("runs") == {"a": [1, 2]}  # the file and its checksum untouched
    with pytest.raises(KeyError, match="save it first"):
        data.add_metrics("never saved", {"count": 1})
    (tmp_path / "runs.json").write_text("{}")
    with pytest.raises(ValueError):
        data.load_json("runs")


def test_a_transcript_prints_the_recorded_full_mode_lines_only_in_fast_mode(capsys):
    recorded = {"race": ["Adam: 97.3 %"]}
    fast = data.Transcript(recorded, fast=True)
    fast.show("race", ["Adam: 61.0 %"])
    fast.show("search", ["grid: 0.9"])
    out = capsys.readouterr().out
    assert out.index("Adam: 61.0 %") < out.index("printed:") < out.index("    Adam: 97.3 %")
    assert "no recorded full-mode run" in out.split("grid: 0.9")[1]
    assert fast.lines == {"race": ["Adam: 61.0 %"], "search": ["grid: 0.9"]}
    full = data.Transcript(recorded, fast=False)
    full.show("race", ["Adam: 97.4 %"])
    assert capsys.readouterr().out == "Adam: 97.4 %\n"
    assert full.lines == {"race": ["Adam: 97.4 %"]}
    same = data.Transcript(recorded, fast=True)
    same.keep("race", ["Adam: 97.4 %"])  # a demo that runs the same in both modes
    same.replay("race")  # lecture mode: the demo did not run
    same.replay("search")
    out = capsys.readouterr().out
    assert out.count("Adam: 97.4 %") == 1 and "Not run here" in out and "    Adam: 97.3 %" in out
    assert "no recorded full-mode run" in out.split("Adam: 97.3 %")[1]


def test_chapter_10s_text_quotes_the_full_mode_lines_it_ships():
    """The closing section's numbers are ones the shipped full-mode transcript printed."""
    recorded = data.load_json("10_schedule_runs")["recorded"]
    assert set(recorded) == {"sweep", "race", "range", "retuned", "warm-up", "early stopping", "search"}
    printed = "\n".join(line for lines in recorded.values() for line in lines)
    for number in ("0.713", "0.339", "1.401", "0.134", "93.8%", "96.9%", "0.114", "0.123", "39.0%", "93.3%"):
        assert number in printed, number


def test_assert_close_compares_dicts_key_by_key():
    checks.assert_close({"step": 2, "m": torch.ones(2)}, {"step": 2, "m": torch.ones(2)})
    with pytest.raises(checks.CheckFailure, match=r"\['m'\]"):
        checks.assert_close({"step": 2, "m": torch.zeros(2)}, {"step": 2, "m": torch.ones(2)})
    with pytest.raises(checks.CheckFailure, match="missing 'm'"):
        checks.assert_close({"step": 2}, {"step": 2, "m": torch.ones(2)})
    with pytest.raises(checks.CheckFailure, match="expected a dict"):
        checks.assert_close((1, 2), {"step": 2})
