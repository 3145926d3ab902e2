"""Datasets the chapters use, all offline.

* Files bundled in ``data/`` are listed in ``data/manifest.json`` (source, licence, sha256);
  :func:`bundled` returns a verified path to one.
* Images come from scikit-learn's bundled ``load_digits`` (8×8 greyscale digits, 1,797 images).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from dlcourse.assets import REPO_ROOT, sha256_of

DATA_DIR = REPO_ROOT / "data"
MANIFEST = DATA_DIR / "manifest.json"


def manifest() -> dict[str, dict[str, str]]:
    """The bundled files: name → {"path", "sha256", "source", "licence"}."""
    if not MANIFEST.exists():
        return {}
    return json.loads(MANIFEST.read_text())


def _write_manifest(entries: dict[str, dict]) -> None:
    """Write the manifest as every writer here does: sorted keys, two-space indents, a final newline."""
    MANIFEST.write_text(json.dumps(entries, indent=2, sort_keys=True) + "\n")


def bundled(name: str) -> Path:
    """Verified path of the bundled file ``name`` (raises when it is missing or its sha256 differs)."""
    entries = manifest()
    if name not in entries:
        raise KeyError(f"no bundled file named {name!r}; data/manifest.json lists: {', '.join(entries) or 'nothing'}")
    entry = entries[name]
    path = DATA_DIR / entry["path"]
    if not path.exists():
        raise FileNotFoundError(f"{path} is listed in data/manifest.json but missing")
    if sha256_of(path) != entry["sha256"]:
        raise ValueError(f"{path} does not match the sha256 in data/manifest.json")
    return path


@dataclass(frozen=True)
class Split:
    """Tensors of a train/test split: ``x`` float32 (N, D) scaled to [0, 1], ``y`` int64 (N,)."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor


def digits(test_fraction: float = 0.25, seed: int = 0) -> Split:
    """scikit-learn's 8×8 digits as flat 64-pixel vectors in [0, 1], split with a seeded permutation."""
    from sklearn.datasets import load_digits

    raw = load_digits()
    x = torch.tensor(raw.data, dtype=torch.float32) / 16.0  # (1797, 64); pixel values are 0..16
    y = torch.tensor(raw.target, dtype=torch.int64)  # (1797,)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    n_test = int(round(test_fraction * len(y)))
    test, train = order[:n_test], order[n_test:]
    return Split(x[train], y[train], x[test], y[test])


# ----------------------------------------------------------------------------------------------------
# Course-trained checkpoints: safetensors in data/, listed in the manifest with the metric they reached.


def save_checkpoint(name: str, module: torch.nn.Module, metrics: dict[str, float], source: str) -> Path:
    """Write ``module``'s weights to ``data/<name>.safetensors`` and record them in the manifest.

    ``source`` says how to reproduce the file (a make target); ``metrics`` what it reached.
    """
    from safetensors.torch import save_file

    path = DATA_DIR / f"{name}.safetensors"
    # cloned: tied weights (one tensor under two names) are stored once under each name
    state = {k: v.detach().cpu().clone().contiguous() for k, v in module.state_dict().items()}
    save_file(state, str(path), metadata={k: str(v) for k, v in metrics.items()})
    entries = manifest()
    entries[name] = {"path": path.name, "sha256": sha256_of(path), "source": source,
                     "licence": "MIT (trained by the course)", "metrics": metrics}
    _write_manifest(entries)
    return path


def add_metrics(name: str, metrics: dict[str, float]) -> None:
    """Record more of what the run behind bundled file ``name`` measured (e.g. a count made with the checkpoint
    after it was saved) in its manifest entry; the file itself is not touched."""
    entries = manifest()
    if name not in entries:
        raise KeyError(f"no bundled file named {name!r} to add metrics to; save it first")
    entries[name].setdefault("metrics", {}).update(metrics)
    _write_manifest(entries)


def load_checkpoint(name: str, module: torch.nn.Module) -> dict[str, float]:
    """Load a verified bundled checkpoint into ``module`` (names must match); returns its recorded metrics."""
    from safetensors.torch import load_file

    state = load_file(str(bundled(name)))
    module.load_state_dict(state)
    return dict(manifest()[name].get("metrics", {}))


def save_json(name: str, payload: dict, metrics: dict[str, float], source: str,
              licence: str = "MIT (trained by the course)") -> Path:
    """Write ``payload`` to ``data/<name>.json`` (e.g. shipped training curves) and record it in the manifest."""
    path = DATA_DIR / f"{name}.json"
    path.write_text(json.dumps(payload, separators=(",", ":")) + "\n")
    entries = manifest()
    entries[name] = {"path": path.name, "sha256": sha256_of(path), "source": source, "licence": licence,
                     "metrics": metrics}
    _write_manifest(entries)
    return path


def load_json(name: str) -> dict:
    """A verified bundled JSON file (see :func:`save_json`)."""
    return json.loads(bundled(name).read_text())


class Transcript:
    """What a chapter's demos printed, kept per demo, with the lines a full-mode run printed beside them.

    FAST mode trains for a fraction of the steps, so its numbers cannot back sentences written about a
    full-mode run. Each demo prints its result through :meth:`show`; the lines are kept in :attr:`lines`,
    which ``make checkpoints`` ships (e.g. inside a chapter's shipped JSON), and in FAST mode the recorded
    full-mode lines of the same demo are printed under the fresh ones, so the text's numbers are on screen.
    """

    def __init__(self, recorded: dict[str, list[str]] | None = None, *, fast: bool | None = None) -> None:
        from dlcourse import runtime  # runtime is below data in the package; imported where used

        self.recorded = dict(recorded or {})
        self.fast = runtime.is_fast() if fast is None else fast
        self.lines: dict[str, list[str]] = {}

    def replay(self, key: str) -> None:
        """Print the recorded full-mode lines of a demo that did not run here (lecture mode, its switch off)."""
        self._print_recorded(key, "Not run here (RUN_LIVE = False); the recorded full-mode run (make checkpoints) "
                                  "printed:",
                             "Not run here (RUN_LIVE = False), and no recorded full-mode run of this demo is shipped.")

    def keep(self, key: str, lines: list[str]) -> None:
        """Print ``lines`` and keep them under ``key``: a demo that runs the same in FAST and full mode."""
        self.lines[key] = [str(line) for line in lines]
        print("\n".join(self.lines[key]))

    def show(self, key: str, lines: list[str]) -> None:
        """Print ``lines``, keep them under ``key`` and, in FAST mode, print the recorded full-mode ones."""
        self.keep(key, lines)
        if self.fast:
            self._print_recorded(key, "The recorded full-mode run (make checkpoints) printed:",
                                 "(no recorded full-mode run of this demo is shipped: run the notebook in full mode "
                                 "to see it)")

    def _print_recorded(self, key: str, heading: str, missing: str) -> None:
        """``heading`` and the recorded lines of ``key``, indented; ``missing`` when none are shipped."""
        recorded = self.recorded.get(key)
        print("\n".join([heading, *("    " + line for line in recorded)]) if recorded else missing)
