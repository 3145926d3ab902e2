"""Run code in a real course kernel (the one nbgrader and students use) and collect what it printed."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from jupyter_client.manager import KernelManager

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class CellRun:
    source: str
    stdout: str = ""
    stderr: str = ""
    error: tuple[str, str] | None = None  # (ename, evalue)
    outputs: list[dict] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None


class Kernel:
    """A ``dlcourse`` kernel in FAST mode, started in a chapter's folder."""

    def __init__(self, cwd: Path, fast: bool = True) -> None:
        # One thread per kernel: the suite runs two workers on two cores, and oversubscribed BLAS threads make
        # small models tens of times slower.
        env = dict(os.environ, DLCOURSE_FAST="1" if fast else "0", PYTHONWARNINGS="default", OMP_NUM_THREADS="1")
        env.pop("NBGRADER_EXECUTION", None)
        self.km = KernelManager(kernel_name="dlcourse")
        self.km.start_kernel(cwd=str(cwd), env=env)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)

    def run(self, source: str, timeout: float = 300) -> CellRun:
        result = CellRun(source)

        def hook(msg: dict) -> None:
            kind, content = msg["header"]["msg_type"], msg["content"]
            if kind == "stream":
                if content["name"] == "stderr":
                    result.stderr += content["text"]
                else:
                    result.stdout += content["text"]
            elif kind == "error":
                result.error = (content["ename"], content["evalue"])
            elif kind in ("display_data", "execute_result"):
                result.outputs.append(content)

        reply = self.kc.execute_interactive(source, output_hook=hook, timeout=timeout, allow_stdin=False)
        if reply["content"]["status"] == "error" and result.error is None:
            result.error = (reply["content"]["ename"], reply["content"]["evalue"])
        return result

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def code_cells(path: Path) -> list[nbformat.NotebookNode]:
    nb = nbformat.read(path, as_version=4)
    return [c for c in nb.cells if c.cell_type == "code"]


def grade_id(cell: nbformat.NotebookNode) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def reference_answers(chapter: str) -> dict[str, str]:
    """grade_id → the solution's answer as a student would type it (the solution without its markers)."""
    (solution,) = sorted((ROOT / "solutions" / chapter).glob("*.ipynb"))
    out = {}
    for cell in nbformat.read(solution, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            out[meta["grade_id"]] = "\n".join(
                line for line in cell.source.splitlines()
                if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line)
    return out


def released_notebook(chapter: str, answers: dict[str, str] | None = None, edit=None) -> nbformat.NotebookNode:
    """The released notebook with some answer cells replaced (``answers``) and an optional ``edit(nb)``."""
    (release,) = sorted((ROOT / "course" / chapter).glob("*.ipynb"))
    nb = nbformat.read(release, as_version=4)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if answers and gid in answers:
            cell.source = answers[gid]
    if edit:
        edit(nb)
    return nb
