"""Chapter 09's figure: BigBird's gathered key blocks, and the block grid by kind.

Drawn with the shared conventions and helpers of :mod:`dlcourse.diagrams`.
"""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from dlcourse.diagrams import ACCENT, INK, _arrow, _box, _canvas, _finish, _text

BLOCK_KINDS = {"window": "#5b9bd5", "global": "#e8877a", "random": "#f4c542"}


def bigbird_block_layout(n_blocks: int = 8, r: int = 2, seed: int = 0) -> list[list[str | None]]:
    """The kind of every (query block, key block) pair in BigBird's pattern: "global" for the first and last
    query blocks (whole rows) and key blocks (whole columns), "window" for key blocks I − 1, I, I + 1 of a
    middle query block I, "random" for r further key blocks drawn per middle row (seeded), None elsewhere."""
    import random

    if n_blocks < 5 or not 0 <= r <= n_blocks - 5:
        raise ValueError(f"need at least 5 blocks and 0 <= r <= n_blocks - 5, got {n_blocks=}, {r=}")
    rng = random.Random(seed)
    grid: list[list[str | None]] = []
    for i in range(n_blocks):
        if i in (0, n_blocks - 1):
            grid.append(["global"] * n_blocks)
            continue
        row: list[str | None] = [None] * n_blocks
        row[0] = row[-1] = "global"
        for j in (i - 1, i, i + 1):
            row[j] = row[j] or "window"  # blocks 1 and n_b - 2 see a global block in their window
        free = [j for j in range(n_blocks) if row[j] is None]
        for j in rng.sample(free, r):
            row[j] = "random"
        grid.append(row)
    return grid


def bigbird_blocks(n_blocks: int = 8, r: int = 2, query: int = 3, seed: int = 0) -> Figure:
    """BigBird as it computes: the sequence cut into ``n_blocks`` blocks of b tokens; for the middle query block
    ``query``, its 3 window key blocks, the 2 global blocks and its r random blocks are gathered into one
    contiguous (5 + r)·b × d key tensor, and the scores are one dense b × (5 + r)·b product. Right: the block
    grid (query blocks × key blocks) coloured by kind, the row of ``query`` outlined."""
    grid = bigbird_block_layout(n_blocks, r, seed)
    if not 2 <= query <= n_blocks - 3:  # a window that touches no global block: 5 + r distinct key blocks
        raise ValueError(f"query must be a block from 2 to {n_blocks - 3}, got {query}")
    width, height = 10.4, 4.8
    fig, (ax,) = _canvas(width, height)
    cell, x0, y_seq = min(0.6, 6.0 / n_blocks), 0.5, 3.55
    row = grid[query]
    for j, kind in enumerate(row):
        ax.add_patch(Rectangle((x0 + j * cell, y_seq), cell, 0.45, facecolor=BLOCK_KINDS[kind] if kind else "white",
                               edgecolor=INK, linewidth=0.9, zorder=2))
        _text(ax, x0 + (j + 0.5) * cell, y_seq + 0.225, str(j), size=9)
    _text(ax, x0 + n_blocks * cell / 2, y_seq + 0.7, f"key blocks $0 \\ldots {n_blocks - 1}$, $b$ tokens each",
          size=9)
    order = ([j for j in range(n_blocks) if row[j] == "window"] + [0, n_blocks - 1]
             + [j for j in range(n_blocks) if row[j] == "random"])
    gx0, y_g, gcell = 0.9, 1.95, min(0.55, 3.85 / len(order))
    for slot, j in enumerate(order):
        ax.add_patch(Rectangle((gx0 + slot * gcell, y_g), gcell, 0.45, facecolor=BLOCK_KINDS[row[j]],
                               edgecolor=INK, linewidth=0.9, zorder=2))
        _text(ax, gx0 + (slot + 0.5) * gcell, y_g + 0.225, str(j), size=9)
        _arrow(ax, (x0 + (j + 0.5) * cell, y_seq), (gx0 + (slot + 0.5) * gcell, y_g + 0.47), color="0.55",
               lw=0.8, size=7)
    gright = gx0 + len(order) * gcell
    _text(ax, gright + 0.15, y_g + 0.225, f"gathered: one contiguous\n$(5 + r)\\,b \\times d$ key tensor ($r = {r}$)",
          size=8.5, ha="left")
    _box(ax, 1.3, 0.95, f"query block {query}\n$(b \\times d)$", "focus", w=1.3, h=0.6, size=9)
    _arrow(ax, (1.95, 0.95), (2.75, 0.95))
    _box(ax, 4.3, 0.95, "$Q_I K_{\\mathrm{gathered}}^\\top$: one dense\n$b \\times (5 + r)\\,b$ block product",
         "attention", w=3.0, h=0.6, size=9)
    _arrow(ax, (gx0 + len(order) * gcell / 2, y_g), (gx0 + len(order) * gcell / 2, 1.25))
    # the block grid
    gs, left, bottom = min(0.3, 2.7 / n_blocks), 7.35, 0.95
    for i, kinds in enumerate(grid):
        for j, kind in enumerate(kinds):
            ax.add_patch(Rectangle((left + j * gs, bottom + (n_blocks - 1 - i) * gs), gs, gs,
                                   facecolor=BLOCK_KINDS[kind] if kind else "white", edgecolor="0.6",
                                   linewidth=0.6, zorder=2))
        _text(ax, left - 0.15, bottom + (n_blocks - 0.5 - i) * gs, str(i), size=7.5)
    for j in range(n_blocks):
        _text(ax, left + (j + 0.5) * gs, bottom + n_blocks * gs + 0.13, str(j), size=7.5)
    ax.add_patch(Rectangle((left, bottom + (n_blocks - 1 - query) * gs), n_blocks * gs, gs, fill=False,
                           edgecolor=ACCENT, linewidth=2.0, zorder=3))
    _text(ax, left + n_blocks * gs / 2, bottom + n_blocks * gs + 0.38, "key block", size=8.5)
    _text(ax, left - 0.45, bottom + n_blocks * gs / 2, "query block", size=8.5, rotation=90)
    for k, kind in enumerate(BLOCK_KINDS):
        lx = left - 0.2 + 1.0 * k
        ax.add_patch(Rectangle((lx, 0.35), 0.22, 0.22, facecolor=BLOCK_KINDS[kind], edgecolor=INK, linewidth=0.6))
        _text(ax, lx + 0.3, 0.46, kind, size=8.5, ha="left")
    _text(ax, width / 2, height - 0.25, "BigBird: gather whole key blocks, multiply dense blocks", size=12,
          weight="bold")
    return _finish(fig, f"BigBird's block-sparse attention with {n_blocks} blocks: for query block {query}, its 3 "
                        f"window blocks, 2 global blocks and {r} random blocks are gathered into one key tensor; "
                        "right, the grid of query blocks by key blocks coloured by kind, with the row of block "
                        f"{query} outlined.")
