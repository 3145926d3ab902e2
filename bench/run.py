"""Benchmarks: each solution notebook's wall time in FAST and full mode, grading time, and widget latency.

Results are written to bench/results/<machine>.json; they are measurements, not pass/fail tests.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]  # kernel.solution_namespace; the `autograder` package
from kernel import solution_namespace  # noqa: E402 - a solution notebook's answer cells, run (tests/kernel.py)

OUT = ROOT / "bench" / "results"
RUN_LOG = "DLCOURSE_RUN_LOG"  # dlcourse.training.RUN_LOG: where training runs record themselves


def notebook_seconds(path: Path, fast: bool, run_log: Path | None = None) -> float:
    """Wall time of executing the notebook top to bottom; its training runs go to ``run_log`` when given."""
    from autograder.bookkeeping.kernels import run_notebook

    before = {name: os.environ.get(name) for name in ("DLCOURSE_FAST", RUN_LOG)}
    os.environ["DLCOURSE_FAST"] = "1" if fast else "0"  # the kernel inherits this process's environment
    os.environ.pop(RUN_LOG, None)
    if run_log is not None:
        os.environ[RUN_LOG] = str(run_log)
    try:
        _, seconds = run_notebook(path, timeout=1200)
    finally:  # leave the environment as it was: a caller (a test) goes on in this process
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return seconds


def full_mode_run(path: Path) -> tuple[float, dict[str, dict]]:
    """The notebook in full mode: (wall time, {"<chapter> · <demo>": steps, seconds, throughput, metric}) for
    every training demo it runs (each one records itself with :func:`dlcourse.training.record_run`)."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "runs.jsonl"
        seconds = notebook_seconds(path, fast=False, run_log=log)
        runs = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    named: dict[str, dict] = {}
    for run in runs:  # a demo that trains the same way twice (e.g. two seeds) gets "#2", "#3", ...
        name, n = f"{path.stem} · {run.pop('run')}", 1
        while (f"{name} #{n}" if n > 1 else name) in named:
            n += 1
        named[f"{name} #{n}" if n > 1 else name] = run
    return seconds, named


def grading_seconds(chapter: str) -> dict[str, float]:
    """One reference submission graded two ways, FAST mode: hidden tests run inside the student's kernel
    (the solution notebook executed as is) against the trusted grader (sandboxed kernel, tests in the
    grader through proxies). Both include starting the kernel."""
    from autograder.core import grade, sandbox

    source = ROOT / "solutions" / chapter / f"{chapter}.ipynb"
    release = ROOT / "course" / chapter / f"{chapter}.ipynb"
    in_kernel = notebook_seconds(source, fast=True)
    start = time.perf_counter()
    result, _ = grade.grade(release, source, source, student="bench", chapter=chapter,
                            sandbox=sandbox.Sandbox(unsafe=not sandbox.bwrap_available()[0]))
    trusted = time.perf_counter() - start
    assert not result.error and all(t.score == t.points for t in result.tests), "the reference lost points"
    return {f"{chapter} graded with tests in the kernel (FAST), s": round(in_kernel, 1),
            f"{chapter} graded by the trusted grader (FAST), s": round(trusted, 1),
            f"{chapter} trusted grading overhead, %": round(100 * (trusted / in_kernel - 1))}


def widget_ms(repeats: int = 20) -> dict[str, float]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dlcourse.welcome import widgets

    logits = [2.0, 1.5, 0.3, -0.5, -1.0, -2.0]
    labels = list("abcdef")
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        fig = widgets.draw_temperature(widgets.temperature_state(logits, 0.1 + i / 10), labels)
        fig.canvas.draw()
        plt.close(fig)
        times.append((time.perf_counter() - start) * 1000)
    return {"softmax_temperature redraw, median ms": round(statistics.median(times), 1), **optim_widgets_ms(repeats)}


def optim_widgets_ms(repeats: int = 20) -> dict[str, float]:
    """Chapter 10: one playground redraw (four 100-step paths with the reference update functions, drawn into
    the kept figure) and one schedule-designer redraw (1000 steps of a warm-up + cosine schedule)."""
    import matplotlib.pyplot as plt

    from dlcourse import data
    from dlcourse.optim import widgets as wopt

    def sgd(param, grad, state, *, lr, momentum=0.0, nesterov=False):  # torch.optim.SGD's step, functional
        buf = momentum * state["buf"] + grad if "buf" in state else grad
        return param - lr * ((grad + momentum * buf if nesterov else buf) if momentum else grad), {"buf": buf}

    def adam(param, grad, state, *, lr, betas=(0.9, 0.999)):
        t, m, v = state.get("t", 0) + 1, state.get("m", 0 * grad), state.get("v", 0 * grad)
        m, v = betas[0] * m + (1 - betas[0]) * grad, betas[1] * v + (1 - betas[1]) * grad ** 2
        step = lr * (m / (1 - betas[0] ** t)) / ((v / (1 - betas[1] ** t)).sqrt() + 1e-8)
        return param - step, {"t": t, "m": m, "v": v}

    def cosine(shape, warmup, total, cycles):
        def factor(t):
            if t < warmup:
                return (t + 1) / (warmup + 1)
            return 0.5 * (1 + math.cos(math.pi * (t - warmup) / (total - warmup)))
        return factor

    runs = data.load_json("10_schedule_runs")
    view, playground, designer = wopt.valley_view(), [], []
    for i in range(repeats):
        start = time.perf_counter()
        fig = view.show(wopt.playground_state(sgd, adam, "bowl", 0.03, 0.1, 0.5 + i / (2 * repeats), 0.9, 0.999, 100))
        fig.canvas.draw()
        playground.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        fig = wopt.draw_schedule(wopt.schedule_state(cosine, runs["runs"], "cosine", 0.1, 1000, 1.0), runs["lr"])
        fig.canvas.draw()
        plt.close(fig)
        designer.append((time.perf_counter() - start) * 1000)
    return {"optimizer_playground redraw, median ms": round(statistics.median(playground), 1),
            "schedule_designer redraw, median ms": round(statistics.median(designer), 1)}


def gan_widgets_ms(repeats: int = 20) -> dict[str, float]:
    """Chapter 07: one redraw of the training scrubber (the shipped ring snapshots, scored by the reference
    mode coverage) and of the latent walk (the shipped generator), each as the widget shows it (PNG included)."""
    import matplotlib

    matplotlib.use("Agg")

    from dlcourse import data
    from dlcourse.gan import train as gan
    from dlcourse.gan import widgets as wgan
    from dlcourse.grading import references

    coverage = references.load("gan").mode_coverage

    generator = gan.ConvGenerator(latent=32, width=32)
    data.load_checkpoint("07_fashion_dcgan", generator)
    with contextlib.redirect_stdout(io.StringIO()):  # outside a kernel the output area prints
        views = {"training_scrubber": (wgan.training_scrubber(data.load_json("07_ring_runs"), coverage), "index"),
                 "latent_walk": (wgan.latent_walk(generator.eval(), latent=32), "t")}
    results = {}
    for name, (view, control) in views.items():
        slider, times = view.controls[control], []
        for i in range(repeats):
            start = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                slider.value = slider.min + (i % 10) * (slider.max - slider.min) / 10  # each change redraws
            times.append((time.perf_counter() - start) * 1000)
        results[f"{name} redraw, median ms"] = round(statistics.median(times), 1)
    return results


def bert_widgets_ms(repeats: int = 20) -> dict[str, float]:
    """Chapter 03: one answer of the fill-mask explorer (the shipped tiny BERT, run by Hugging Face's
    ``BertForPreTraining`` in the course's layout) and one redraw of the attention-heads viewer (MiniLM's maps
    over a sentence pair), each as the widget shows it."""
    import matplotlib

    matplotlib.use("Agg")
    import torch
    from transformers import BertForPreTraining

    from dlcourse import data
    from dlcourse.bert import model as bert_models
    from dlcourse.bert import train as bert
    from dlcourse.bert import widgets as wbert

    shipped = data.load_json("03_tiny_bert_vocab")
    model = bert_models.InCourseLayout(BertForPreTraining(bert_models.hf_config(**shipped["config"])),
                                       lambda out: out.prediction_logits[0])
    data.load_checkpoint("03_tiny_bert", model)
    model.eval()
    tokenizer = bert.fast_tokenizer(shipped["vocab"])

    def logits(ids: list[int]) -> torch.Tensor:
        with torch.no_grad():
            return model(torch.tensor([ids]))

    minilm, mini_tokenizer = bert.load_minilm()
    pair = mini_tokenizer("The penguin cannot fly.", "It swims with its wings instead.", return_tensors="pt")
    with torch.no_grad():
        maps = [a[0] for a in minilm(**pair, output_attentions=True).attentions]
    with contextlib.redirect_stdout(io.StringIO()):
        fill = wbert.fill_mask_explorer(logits, lambda s: tokenizer(s)["input_ids"], shipped["vocab"], bert.MASK)
        heads = wbert.attention_heads_viewer(maps, mini_tokenizer.convert_ids_to_tokens(pair["input_ids"][0]))
    sentences = ["the king is [MASK]", "my lord , i [MASK] you", "to be , or not to [MASK]", "[MASK] , [MASK] !"]
    changes = {"fill_mask": lambda i: setattr(fill.controls["sentence"], "value", f"{sentences[i % 4]} {i}"),
               "attention_heads": lambda i: setattr(heads.controls["head"], "value", i % 12)}
    results = {}
    for name, change in changes.items():
        times = []
        for i in range(1, repeats + 1):
            start = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                change(i)
            times.append((time.perf_counter() - start) * 1000)
        results[f"{name} redraw, median ms"] = round(statistics.median(times), 1)
    return results


def pattern_designer_ms(repeats: int = 20, n: int = 128) -> dict[str, float]:
    """Chapter 09: one pattern-designer redraw at n = 128 (a window of growing width with one global token,
    the receptive field after 4 layers by boolean products, drawn into the kept figure)."""
    import torch

    from dlcourse.sparse import widgets as wsparse

    def build(n, window, dilation, n_global, n_random, block, seed):
        i = torch.arange(n)
        mask = (i[:, None] - i[None, :]).abs() <= window
        mask[:, :n_global] = mask[:n_global] = True
        return mask

    def reach(mask, layers):
        heard = mask.clone()
        for _ in range(layers - 1):
            heard = (heard.float() @ mask.float()) > 0
        return heard

    view, times = wsparse.pattern_view(), []
    for i in range(repeats):
        start = time.perf_counter()
        view.show(wsparse.pattern_state(build, reach, n, 1 + i % 8, 1, 1, 0, 8, 4)).canvas.draw()
        times.append((time.perf_counter() - start) * 1000)
    return {"pattern_designer redraw (n = 128), median ms": round(statistics.median(times), 1)}


def sampling_explorer_ms(repeats: int = 20) -> dict[str, float]:
    """Chapter 04: one redraw of the next-token bars for the course GPT (forward pass, filters, HTML bars),
    and greedy generation with and without the key-value cache (the solution notebook's ``GPT`` with rotary
    positions holding the shipped checkpoint, its ``greedy_decode`` and ``greedy_decode_cached``)."""
    import torch

    from dlcourse import data, runtime
    from dlcourse.datasets import shakespeare
    from dlcourse.gpt import lm, rotary, sampling

    namespace = solution_namespace("04_gpt_decoding", ("attention_answer", "gpt_answer", "greedy_answer",
                                                      "cache_answer"), lm=lm)
    torch.set_num_threads(2)
    tok = shakespeare.char_corpus().tokenizer
    metrics = data.manifest()["04_shakespeare_gpt"]["metrics"]
    model = namespace["GPT"](len(tok), *(int(metrics[k]) for k in ("n_positions", "n_embd", "n_layer", "n_head")))
    data.load_checkpoint("04_shakespeare_gpt", rotary.use_rotary_positions(model))
    model.eval()
    ids = torch.tensor([tok.encode("ROMEO:\nBut soft, what light through yonder window breaks?\nIt is")])
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        with torch.no_grad():
            logits = model(ids).logits[0, -1] / (0.5 + i / repeats)
        filtered = logits.masked_fill(logits < logits.topk(10).values[-1], float("-inf"))
        sampling.next_token_html(sampling.next_token_state(logits, filtered, tok.decode))
        times.append((time.perf_counter() - start) * 1000)
    prompt = ids[:, :8]
    n_new = model.n_positions - prompt.shape[1]
    decode = {False: namespace["greedy_decode"], True: namespace["greedy_decode_cached"]}
    generation = {cache: 1000 * runtime.best_time(lambda cache=cache: decode[cache](model, prompt, n_new))
                  for cache in (False, True)}
    return {"sampling_explorer redraw (course GPT), median ms": round(statistics.median(times), 1),
            f"course GPT greedy, {n_new} tokens, without cache, ms": round(generation[False], 1),
            f"course GPT greedy, {n_new} tokens, with cache, ms": round(generation[True], 1)}


def t5_widgets_ms(repeats: int = 20) -> dict[str, float]:
    """Chapter 05: one redraw of the span-corruption explorer and of the mask explorer (with the solution
    notebook's answers), and of the cross-attention heat map of the shipped T5 (greedy decoding included)."""
    import matplotlib

    matplotlib.use("Agg")
    import torch

    from dlcourse import data
    from dlcourse.t5 import model as t5_layout
    from dlcourse.t5 import train as t5
    from dlcourse.t5 import widgets as wt5

    namespace = solution_namespace("05_t5", ("noise_answer", "corrupt_answer", "shift_answer", "bucket_answer",
                                            "masks_answer", "block_answer", "model_answer"))
    torch.set_num_threads(2)
    vocab = t5.vocab()
    size = {"vocab_size": len(vocab), **t5.DEMO_SIZE}
    model = namespace["TinyT5"](**size)
    data.load_checkpoint("05_t5", model)
    with contextlib.redirect_stdout(io.StringIO()):
        views = {"span_corruption_explorer": (wt5.span_corruption_explorer(
                     namespace["random_spans_noise_mask"], namespace["span_corruption"], vocab), "seed"),
                 "mask_explorer": (wt5.mask_explorer(namespace["attention_mask"]), "n"),
                 "cross_attention_viewer": (wt5.cross_attention_viewer(t5_layout.to_hf(model, **size), vocab),
                                            "head")}
    results = {}
    for name, (view, control) in views.items():
        widget, times = view.controls[control], []
        options = [value for _, value in widget.options] if hasattr(widget, "options") else None
        for i in range(repeats):
            start = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                widget.value = options[i % len(options)] if options else widget.min + 1 + i % 5
            times.append((time.perf_counter() - start) * 1000)
        results[f"05 {name} redraw, median ms"] = round(statistics.median(times), 1)
    return results


def sparse_attention_costs() -> dict[str, float]:
    """Chapter 09: measured peak memory and time of dense attention against the reference sliding-window
    attention (the solution notebook's answer cells), one head, d = 64, w = 256, n = 512 … 16,384."""
    import torch

    from dlcourse.sparse import measure as sparse

    namespace = solution_namespace("09_sparse_attention", ("masks_answer", "banded_answer"))
    window_mask, attention = namespace["window_mask"], namespace["sliding_window_attention"]
    w = 256
    methods = {"dense": lambda q, k, v: sparse.dense_attention(q, k, v, window_mask(q.shape[-2], w)),
               "banded": lambda q, k, v: attention(q, k, v, w)[0]}
    torch.set_num_threads(2)
    results = {}
    for row in sparse.attention_costs(methods, [512, 1024, 2048, 4096, 8192, 16_384]):
        results[f"09 {row['method']} attention, n = {row['n']}, peak MiB"] = round(row["peak_bytes"] / 2**20, 1)
        results[f"09 {row['method']} attention, n = {row['n']}, s"] = round(row["seconds"], 3)
    return results


def main() -> int:
    results: dict[str, object] = {
        "machine": f"{platform.node()} ({os.cpu_count()} cores, {platform.machine()})",
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d"),
    }
    # `bench/run.py grading` runs only the grading benchmark; `bench/run.py training [chapter ...]` only the
    # full-mode runs with their training demos (of the chapters named, or of all)
    only = sys.argv[1:2]
    chosen = set(sys.argv[2:]) if only == ["training"] else set()
    training_runs: dict[str, dict] = {}
    for path in sorted((ROOT / "solutions").glob("*/*.ipynb")):
        if chosen and path.parent.name not in chosen:
            continue
        if not only or "grading" in only:
            results.update(grading_seconds(path.parent.name))
            print(json.dumps(results, indent=2), flush=True)
        if only and only != ["training"]:
            continue
        if not only:
            key = f"{path.stem} notebook, FAST mode, s"
            results[key] = round(notebook_seconds(path, True), 1)
            print(f"{key}: {results[key]}", flush=True)
        key = f"{path.stem} notebook, full mode, s"
        seconds, runs = full_mode_run(path)
        results[key] = round(seconds, 1)
        training_runs.update(runs)
        print(f"{key}: {results[key]}", flush=True)
        for name, run in runs.items():
            print(f"  {name}: {json.dumps(run)}", flush=True)
    if training_runs:
        results["training demos (full mode)"] = training_runs
    if not only:
        results.update(widget_ms())
        results.update(sampling_explorer_ms())
        results.update(pattern_designer_ms())
        results.update(gan_widgets_ms())
        results.update(t5_widgets_ms())
        results.update(bert_widgets_ms())
        results.update(sparse_attention_costs())
    OUT.mkdir(parents=True, exist_ok=True)
    target = OUT / ("latest.json" if not only else f"latest-{only[0]}.json")
    target.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    print(f"written to {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
