"""Chapter 06's widgets: the patch explorer, [CLS]-attention maps, and position-embedding similarity.

The logic — :func:`patch_grid_state`, :func:`cls_attention_state`, :func:`position_similarity` — is plain
and tested without a browser; the drawing functions only plot what those return.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from dlcourse.attention import AttentionMap
from dlcourse.widgets.attention import MEAN
from dlcourse.widgets.base import InteractiveView, KeptFigure, interactive_view

# ----------------------------------------------------------------------------------------------------
# Patch explorer


@dataclass(frozen=True)
class PatchGrid:
    """How an H×W×C image is cut into P×P patches, and what that costs a ViT."""

    height: int
    width: int
    channels: int
    patch: int

    @property
    def rows(self) -> int:
        return self.height // self.patch

    @property
    def cols(self) -> int:
        return self.width // self.patch

    @property
    def num_patches(self) -> int:
        """N = HW / P²."""
        return self.rows * self.cols

    @property
    def sequence_length(self) -> int:
        """N + 1, with the [CLS] token."""
        return self.num_patches + 1

    @property
    def vector_size(self) -> int:
        """C·P² numbers in each flattened patch."""
        return self.channels * self.patch**2

    @property
    def attention_entries(self) -> int:
        """(N + 1)² attention weights per head and layer."""
        return self.sequence_length**2

    def attention_flops(self, dim: int) -> int:
        """Multiply-adds of QKᵀ and of the weighted sum of V, per layer: 2·(N+1)²·D."""
        return 2 * self.attention_entries * dim


def patch_grid_state(image_shape: Sequence[int], patch: int) -> PatchGrid:
    """The grid of ``patch``-pixel patches over an image of shape (H, W) or (H, W, C); P must divide H and W."""
    height, width = int(image_shape[0]), int(image_shape[1])
    channels = int(image_shape[2]) if len(image_shape) > 2 else 1
    if patch < 1 or height % patch or width % patch:
        raise ValueError(f"patch size {patch} does not divide the {height}×{width} image")
    return PatchGrid(height, width, channels, patch)


def patch_sizes(height: int, width: int, smallest: int = 2, fewest_patches: int = 4) -> list[int]:
    """The patch sizes that tile an H×W image exactly, from ``smallest`` up to leaving ``fewest_patches``."""
    return [p for p in range(smallest, min(height, width) + 1)
            if height % p == 0 and width % p == 0 and (height // p) * (width // p) >= fewest_patches]


def draw_patch_grid(image: np.ndarray, grid: PatchGrid, dim: int = 768, axes=None):
    """The image with the patch grid, and the first patches as the C·P² vectors the model reads."""
    import matplotlib.pyplot as plt

    own_figure = axes is None
    if own_figure:
        fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), gridspec_kw={"width_ratios": [1, 1.3]})
        fig.subplots_adjust(left=0.02, right=0.98, bottom=0.13, top=0.84, wspace=0.16)  # fixed: no layout pass
    fig = axes[0].figure
    ax, ax_vec = axes
    height, width = image.shape[:2]
    ax.imshow(image, cmap="gray" if image.ndim == 2 else None, interpolation="nearest")  # pixels as pixels
    ax.hlines([r * grid.patch - 0.5 for r in range(1, grid.rows)], -0.5, width - 0.5, color="yellow", lw=0.8)
    ax.vlines([c * grid.patch - 0.5 for c in range(1, grid.cols)], -0.5, height - 0.5, color="yellow", lw=0.8)
    ax.set(xticks=[], yticks=[], title=f"P = {grid.patch}: {grid.rows} × {grid.cols} = {grid.num_patches} patches")
    shown = min(grid.num_patches, 24)
    pixels = image if image.ndim == 3 else image[..., None]
    rows = []
    for n in range(shown):  # channel-major vectors: all of R, then G, then B
        r, c = divmod(n, grid.cols)
        patch = pixels[r * grid.patch:(r + 1) * grid.patch, c * grid.patch:(c + 1) * grid.patch]
        rows.append(np.transpose(patch, (2, 0, 1)).reshape(-1))
    ax_vec.imshow(np.stack(rows).astype(np.float32), aspect="auto", cmap="gray", interpolation="nearest")
    ax_vec.set(xlabel=f"C·P² = {grid.vector_size} numbers per patch (channel-major)", ylabel="patch n",
               title=f"the first {shown} of N = {grid.num_patches} patch vectors")
    cost = grid.attention_flops(dim)
    fig.suptitle(f"sequence length N + 1 = {grid.sequence_length}; attention weights (N+1)² = "
                 f"{grid.attention_entries:,} per head and layer; QKᵀ and AV ≈ {cost / 1e6:,.1f} M multiply-adds "
                 f"per layer at D = {dim}", fontsize=9)
    if not own_figure:
        fig.tight_layout()
    return fig


def patch_explorer(images: dict[str, np.ndarray], dim: int = 768, patch: int | None = None) -> InteractiveView:
    """Pick an image and a patch size: the grid, the patch vectors, N, the sequence length and the N² cost."""
    import ipywidgets as W

    first = next(iter(images.values()))
    sizes = patch_sizes(*first.shape[:2])
    picker = W.Dropdown(options=list(images), description="image")
    slider = W.SelectionSlider(options=sizes, value=patch if patch in sizes else sizes[len(sizes) // 2],
                               description="patch P")

    def on_image(change) -> None:
        options = patch_sizes(*images[change["new"]].shape[:2])
        keep = slider.value if slider.value in options else options[len(options) // 2]
        slider.options, slider.value = options, keep

    picker.observe(on_image, names="value")

    def render(image: str, patch: int):
        picture = images[image]
        return draw_patch_grid(picture, patch_grid_state(picture.shape, patch), dim)

    return interactive_view({"image": picker, "patch": slider}, render, "patch explorer")


# ----------------------------------------------------------------------------------------------------
# [CLS] attention


def cls_attention_state(maps: Sequence[AttentionMap], layer: int, head: int | str, grid: tuple[int, int],
                        batch_index: int = 0) -> np.ndarray:
    """How much the [CLS] token (position 0) attends to each patch: a (rows, cols) map.

    ``maps`` are one forward pass's attention maps (:func:`dlcourse.attention.capture_attention`), one per
    layer, each (B, H, N+1, N+1); ``head`` is an index or :data:`MEAN`. The weight [CLS] gives itself is
    left out, so the map need not sum to 1.
    """
    if not 0 <= layer < len(maps):
        raise ValueError(f"layer {layer} out of range: the model has {len(maps)} layers")
    weights = maps[layer].weights[batch_index]  # (H, N+1, N+1)
    if head == MEAN:
        row = weights[:, 0].mean(dim=0)
    else:
        if not 0 <= int(head) < weights.shape[0]:
            raise ValueError(f"head {head} out of range: the layer has {weights.shape[0]} heads")
        row = weights[int(head), 0]
    rows, cols = grid
    if row.numel() - 1 != rows * cols:
        raise ValueError(f"{row.numel() - 1} patches do not fill a {rows}×{cols} grid")
    return row[1:].reshape(rows, cols).numpy()


def draw_cls_attention(image: np.ndarray, attention: np.ndarray, title: str, axes=None):
    """The image, and the [CLS] attention map stretched over it."""
    import matplotlib.pyplot as plt

    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=(7, 3.4))
    fig = axes[0].figure
    axes[0].imshow(image, cmap="gray", interpolation="nearest")
    axes[0].set(xticks=[], yticks=[], title=title)
    h, w = image.shape[:2]
    axes[1].imshow(image, cmap="gray", interpolation="nearest")
    shown = axes[1].imshow(attention, cmap="inferno", alpha=0.65, extent=(-0.5, w - 0.5, h - 0.5, -0.5),
                           interpolation="nearest")
    axes[1].set(xticks=[], yticks=[], title="[CLS] → patches")
    fig.colorbar(shown, ax=axes[1], fraction=0.046, pad=0.04)
    fig.tight_layout()
    return fig


def cls_attention_viewer(run: Callable[[int], tuple[list[AttentionMap], np.ndarray, str]], count: int,
                         grid: tuple[int, int], layers: int, heads: int) -> InteractiveView:
    """Pick a test image, a layer and a head: where the [CLS] token looks.

    ``run(index)`` returns the attention maps of one forward pass on test image ``index``, the image as an
    (H, W) array, and a caption (label and prediction).
    """
    import ipywidgets as W

    cache: dict[int, tuple[list[AttentionMap], np.ndarray, str]] = {}
    controls = {
        "index": W.BoundedIntText(value=0, min=0, max=count - 1, description="test image"),
        "layer": W.IntSlider(value=layers - 1, min=0, max=layers - 1, description="layer"),
        "head": W.Dropdown(options=[MEAN, *range(heads)], value=MEAN, description="head"),
    }

    def render(index: int, layer: int, head):
        if index not in cache:
            cache[index] = run(index)
        maps, image, caption = cache[index]
        state = cls_attention_state(maps, layer, head, grid)
        return draw_cls_attention(image, state, f"{caption}\nlayer {layer}, {head if head == MEAN else f'head {head}'}")

    return interactive_view(controls, render, "[CLS] attention")


# ----------------------------------------------------------------------------------------------------
# Position embeddings


def position_similarity(position_embeddings: torch.Tensor, grid: tuple[int, int]) -> np.ndarray:
    """Cosine similarity of every patch's position embedding with every other's: (rows, cols, rows, cols).

    ``position_embeddings`` is (1, N+1, D) or (N+1, D), [CLS] first (left out here). Entry [i, j] is the
    map of how similar patch (i, j)'s embedding is to each position — the figure of the ViT paper.
    """
    pos = position_embeddings.detach().reshape(-1, position_embeddings.shape[-1])[1:].double()
    rows, cols = grid
    if len(pos) != rows * cols:
        raise ValueError(f"{len(pos)} position embeddings do not fill a {rows}×{cols} grid")
    unit = pos / pos.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return (unit @ unit.T).reshape(rows, cols, rows, cols).numpy()


def neighbour_score(similarity: np.ndarray) -> float:
    """Mean similarity of grid neighbours (4-neighbourhood) minus the mean over all other pairs.

    Near 0 for random embeddings; positive when the embeddings learned the 2-D layout.
    """
    rows, cols = similarity.shape[:2]
    near, far = [], []
    for i in range(rows):
        for j in range(cols):
            for k in range(rows):
                for m in range(cols):
                    distance = abs(i - k) + abs(j - m)
                    if distance == 1:
                        near.append(similarity[i, j, k, m])
                    elif distance > 1:
                        far.append(similarity[i, j, k, m])
    return float(np.mean(near) - np.mean(far))


def similarity_mosaic(similarity: np.ndarray) -> np.ndarray:
    """The (rows, cols, rows, cols) maps tiled into one image, patch (i, j)'s map in tile (i, j), with a
    one-pixel gap (NaN, drawn blank) between tiles."""
    rows, cols = similarity.shape[:2]
    mosaic = np.full((rows * (rows + 1) - 1, cols * (cols + 1) - 1), np.nan)
    for i in range(rows):
        for j in range(cols):
            mosaic[i * (rows + 1): i * (rows + 1) + rows, j * (cols + 1): j * (cols + 1) + cols] = similarity[i, j]
    return mosaic


@dataclass(frozen=True)
class SimilarityState:
    similarity: np.ndarray  # (rows, cols, rows, cols)
    title: str
    selected: tuple[int, int]


def draw_position_similarity(similarity: np.ndarray, title: str, selected: tuple[int, int] | None = None):
    """Every patch's map, tiled as in the ViT paper (one image), and the chosen patch's map enlarged."""
    rows, cols = similarity.shape[:2]
    return _draw_similarity(SimilarityState(similarity, title, selected or (rows // 2, cols // 2)))


def _draw_similarity(state: SimilarityState):
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    similarity = state.similarity
    rows, cols = similarity.shape[:2]
    fig = plt.figure(figsize=(10, 4.6))
    tiles = fig.add_axes((0.02, 0.06, 0.44, 0.80))
    tiles.imshow(similarity_mosaic(similarity), vmin=-1, vmax=1, cmap="viridis", interpolation="nearest")
    tiles.set(xticks=[], yticks=[], title="each patch against every position")
    for side in tiles.spines.values():
        side.set_visible(False)
    fig._dlcourse_box = tiles.add_patch(Rectangle((0, 0), cols + 1, rows + 1, fill=False, ec="red", lw=2))
    big = fig.add_axes((0.53, 0.10, 0.36, 0.72))
    fig._dlcourse_big = big.imshow(similarity[0, 0], vmin=-1, vmax=1, cmap="viridis", interpolation="nearest")
    (fig._dlcourse_cross,) = big.plot([0], [0], "r+", ms=12)
    big.set(xticks=range(cols), yticks=range(rows))
    fig.colorbar(fig._dlcourse_big, cax=fig.add_axes((0.91, 0.10, 0.015, 0.72)), label="cosine similarity")
    _move_similarity(fig, state)
    return fig


def _move_similarity(fig, state: SimilarityState) -> None:
    rows, cols = state.similarity.shape[:2]
    i, j = state.selected
    fig._dlcourse_box.set_xy((j * (cols + 1) - 1, i * (rows + 1) - 1))
    fig._dlcourse_big.set_data(state.similarity[i, j])
    fig._dlcourse_cross.set_data([j], [i])
    fig._dlcourse_big.axes.set_title(f"patch ({i}, {j}) against every position")
    fig.suptitle(state.title, fontsize=10)


def position_similarity_viewer(embeddings: dict[str, tuple[torch.Tensor, tuple[int, int]]]) -> InteractiveView:
    """Pick a model (its position embeddings and grid) and a patch: which positions learned to be neighbours."""
    import ipywidgets as W

    names = list(embeddings)
    rows, cols = embeddings[names[0]][1]
    controls = {
        "model": W.Dropdown(options=names, description="model"),
        "row": W.IntSlider(value=rows // 2, min=0, max=rows - 1, description="patch row"),
        "col": W.IntSlider(value=cols // 2, min=0, max=cols - 1, description="patch col"),
    }

    maps = {name: position_similarity(pos, grid) for name, (pos, grid) in embeddings.items()}
    titles = {name: f"{name}: neighbour score {neighbour_score(sim):+.2f}" for name, sim in maps.items()}
    # drawn once per model; moving the patch moves the frame, the cross and the enlarged map
    kept = KeptFigure(_draw_similarity, _move_similarity, key=lambda state: state.title)

    def on_model(change) -> None:  # the sliders span the chosen model's grid (another model may differ)
        rows, cols = maps[change["new"]].shape[:2]
        controls["row"].max, controls["col"].max = rows - 1, cols - 1

    controls["model"].observe(on_model, names="value")

    def render(model: str, row: int, col: int):
        rows, cols = maps[model].shape[:2]
        return kept.show(SimilarityState(maps[model], titles[model], (min(row, rows - 1), min(col, cols - 1))))

    return interactive_view(controls, render, "position-embedding similarity")
