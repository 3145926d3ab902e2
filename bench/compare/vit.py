"""Chapter 06's ViT and CNN against ``vit-pytorch``'s ViT of the same size, for the same time, on the same images.

The chapter trains a small CNN and its own ``VisionTransformer`` (the classes are taken from the solution
notebook, so the benchmark follows the chapter) for 40 s each on 20,000 Fashion-MNIST images and scores them on
5,000 held-out ones. Here ``vit_pytorch.ViT`` — Phil Wang's widely used compact implementation, from PyPI —
joins them at the same size (4 layers, width 64, 4 heads of 16, MLP 128, one grey channel, [CLS] pooling) and
patch size, trained by the same function (``vision.fit_for``: AdamW, peak learning rate 2e-3, weight decay
0.05, batches of 128 in one seeded order, warm-up and cosine that follow the clock) on the same standardised
images. Models run one after another in one process, as in the chapter, each from ``torch.manual_seed(seed)``.

The chapter's class draws its position embeddings from N(0, 1), as ``vit-pytorch`` does; the ViT paper and
Hugging Face start them at N(0, 0.02²). ``--position-stds`` adds the chapter's ViT with its position embeddings
re-drawn at each of those standard deviations (default: 0.02), and every ViT's row records the *neighbour score*
of its trained position embeddings (``widgets.neighbour_score``: mean cosine similarity of grid neighbours minus
that of the other pairs, about 0 for random vectors), which says whether they learned the 2-D layout.

    python bench/compare/vit.py [--seconds 40] [--seeds 0 1] [--patches 7 4 14] [--position-stds 0.02]
                                [--models cnn chapter public stds] [--out bench/results/compare-vit.json]

The package is installed by ``make bench`` without its dependencies (it names torchvision, which only its
other modules use): ``vit_pytorch/vit.py`` is loaded on its own. Results go to ``bench/results/compare-vit.json``.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import math
import statistics
import sys
from collections import OrderedDict
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = "06_vit"
sys.path.insert(0, str(ROOT / "tests"))  # kernel.reference_answers: a solution notebook's answer cells
OUT = ROOT / "bench" / "results" / "compare-vit.json"
SIZE = dict(dim=64, depth=4, heads=4, mlp_dim=128)
KINDS = ("cnn", "chapter", "stds", "public")


@functools.cache
def course_vit_class() -> type[nn.Module]:
    """The chapter's ``VisionTransformer``, executed from the solution notebook's answer cells."""
    from kernel import reference_answers

    from dlcourse.transformer.model import MultiHeadAttention

    namespace = {"math": math, "torch": torch, "nn": nn, "F": F, "OrderedDict": OrderedDict,
                 "MultiHeadAttention": MultiHeadAttention}
    answers = reference_answers(CHAPTER)
    for grade_id in ("patchify_answer", "embed_answer", "layer_answer", "model_answer"):
        exec(compile(answers[grade_id], f"{CHAPTER}:{grade_id}", "exec"), namespace)
    if "VisionTransformer" not in namespace:
        raise RuntimeError(f"solutions/{CHAPTER} no longer defines VisionTransformer in its answer cells")
    return namespace["VisionTransformer"]


@functools.cache
def vit_pytorch_class() -> type[nn.Module]:
    """``vit_pytorch.vit.ViT``, loaded from its file (the package's ``__init__`` imports torchvision)."""
    spec = importlib.util.find_spec("vit_pytorch")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("vit-pytorch is not installed: make bench installs it (pip install --no-deps "
                         "-r bench/requirements.txt)")
    path = Path(next(iter(spec.submodule_search_locations))) / "vit.py"
    module_spec = importlib.util.spec_from_file_location("vit_pytorch_vit", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module.ViT


def models(patch: int, position_stds: list[float] = (), kinds: tuple[str, ...] = KINDS) -> dict:
    """name → a function that builds the model, for the kinds asked for (see ``KINDS``)."""
    course = course_vit_class()
    from dlcourse.vit import train as vision

    def chapter_vit(position_std: float | None = None) -> nn.Module:
        model = course(28, patch, 1, 10, dim=SIZE["dim"], depth=SIZE["depth"], num_heads=SIZE["heads"],
                       mlp_dim=SIZE["mlp_dim"])
        if position_std is not None:  # as the chapter's make_vit(patch, position_std) does
            nn.init.normal_(model.embeddings.position_embeddings, std=position_std)
        return model

    built = {}
    if "cnn" in kinds:
        built["CNN (chapter)"] = lambda: vision.SmallCNN(28, channels=1, classes=10, width=32)
    if "chapter" in kinds:
        built[f"ViT P = {patch} (chapter)"] = chapter_vit
    if "stds" in kinds:
        for std in position_stds:
            built[f"ViT P = {patch} (chapter, E_pos std {std:g})"] = lambda std=std: chapter_vit(std)
    if "public" in kinds:
        theirs = vit_pytorch_class()
        built[f"ViT P = {patch} (vit-pytorch)"] = lambda: theirs(
            image_size=28, patch_size=patch, num_classes=10, channels=1, dim=SIZE["dim"], depth=SIZE["depth"],
            heads=SIZE["heads"], dim_head=SIZE["dim"] // SIZE["heads"], mlp_dim=SIZE["mlp_dim"], pool="cls")
    return built


def position_embeddings(model: nn.Module) -> torch.Tensor | None:
    """A ViT's learned position embeddings, (1, N + 1, D) with [CLS] first; None for the CNN."""
    if hasattr(model, "embeddings"):
        return model.embeddings.position_embeddings.detach()
    return getattr(model, "pos_embedding", None)  # vit_pytorch.ViT's name for them


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--patches", type=int, nargs="+", default=[7, 4, 14])
    parser.add_argument("--position-stds", type=float, nargs="*", default=[0.02])
    parser.add_argument("--models", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from dlcourse.datasets import fashion
    from dlcourse.vit import train as vision
    from dlcourse.vit import widgets

    train, test = fashion.load("train"), fashion.load("test")
    mean, std = float(train.images.mean()), float(train.images.std())
    x_train, x_test = ((x - mean) / std for x in (train.images, test.images))  # as the chapter standardises
    results: dict[str, list[dict]] = {}
    for patch in args.patches:
        for name, build in models(patch, args.position_stds, tuple(args.models)).items():
            if name.startswith("CNN") and name in results:
                continue
            for seed in args.seeds:
                torch.manual_seed(seed)
                model = build()
                run = vision.fit_for(model, x_train, train.labels, args.seconds, test=(x_test, test.labels),
                                     lr=2e-3, seed=seed)
                row = {"seed": seed, "accuracy": round(run.accuracy, 4), "steps": run.steps,
                       "images_per_second": round(run.images_per_second), "parameters": run.parameters}
                positions = position_embeddings(model)
                if positions is not None:
                    grid = (28 // patch, 28 // patch)
                    row["neighbour_score"] = round(widgets.neighbour_score(
                        widgets.position_similarity(positions, grid)), 3)
                results.setdefault(name, []).append(row)
                print(f"{name:>24} seed {seed}: {run.accuracy:6.1%} | {run.steps:,} steps | "
                      f"{run.images_per_second:,.0f} images/s | {run.parameters:,} parameters", flush=True)
    table = {name: {"mean_accuracy": round(statistics.mean(r["accuracy"] for r in rows), 4),
                    "accuracies": [r["accuracy"] for r in rows],
                    "mean_images_per_second": round(statistics.mean(r["images_per_second"] for r in rows)),
                    "parameters": rows[0]["parameters"]}
             | ({"mean_neighbour_score": round(statistics.mean(r["neighbour_score"] for r in rows), 3)}
                if "neighbour_score" in rows[0] else {}) for name, rows in results.items()}
    args.out.write_text(json.dumps({"machine": f"{torch.get_num_threads()} torch threads, models one after another",
                               "seconds_each": args.seconds, "train_images": len(train.labels),
                               "test_images": len(test.labels), "seeds": args.seeds, "models": table,
                               "runs": results}, indent=1) + "\n")
    print("| model | parameters | held-out accuracy (mean of seeds) | images/s | neighbour score |")
    print("|---|---|---|---|---|")
    for name, row in table.items():
        each = ", ".join(f"{a:.1%}" for a in row["accuracies"])
        score = f"{row['mean_neighbour_score']:+.2f}" if "mean_neighbour_score" in row else ""
        print(f"| {name} | {row['parameters']:,} | {row['mean_accuracy']:.1%} ({each}) | "
              f"{row['mean_images_per_second']:,} | {score} |")


if __name__ == "__main__":
    main()
