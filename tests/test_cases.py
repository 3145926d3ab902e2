"""An error raised inside a function a notebook cell defines names the inputs it met (dlcourse.cases)."""

from __future__ import annotations

import re

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.notebook


def _errors(cells: list[str]) -> list[tuple[str, str, str]]:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in cells])
    NotebookClient(nb, kernel_name="dlcourse", allow_errors=True, timeout=120).execute()
    found = []
    for cell in nb.cells:
        for out in cell.outputs:
            if out.output_type == "error":
                text = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(out.traceback))
                found.append((out.ename, out.evalue, text))
            elif out.output_type == "stream":
                found.append(("stream", out.text.strip(), ""))
    return found


def test_a_library_error_inside_a_students_function_names_its_inputs_and_nothing_else_changes():
    got = _errors([
        "import torch, torch.nn as nn\nfrom dlcourse import checks, runtime\nruntime.setup_notebook(quiet=True)",
        "class Cell(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.w = nn.Parameter(torch.ones(5, 3))\n\n"
        "    def forward(self, x, h, *rest, scale=1.0):\n        return scale * x @ self.w\n",
        "Cell()(torch.zeros(2, 4), torch.zeros(2, 3, dtype=torch.float64), scale=2.0)",
        "checks.assert_true(False, 'a check says its own case')",
        "1 / 0",
        "print('the kernel goes on')"])
    (kind, message, shown), check, division, after = got
    assert (kind, message) == ("RuntimeError", "mat1 and mat2 shapes cannot be multiplied (2x4 and 5x3)")
    assert shown.rstrip().endswith(
        "raised in your Cell.forward, where x = a float32 tensor of shape (2, 4), h = a float64 tensor of shape "
        "(2, 3), rest = a tuple, scale = 2.0"), shown
    assert "matmul" not in shown.splitlines()[-1]
    assert check[0] == "CheckFailure" and "raised in your" not in check[2]  # a check names its own case
    assert division[0] == "ZeroDivisionError" and "raised in your" not in division[2]  # the cell's own code
    assert after == ("stream", "the kernel goes on", "")
