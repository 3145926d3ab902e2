"""Notebooks run by the course's tools (render, the lecture test, the benchmarks) start kernels on Unix sockets."""

from __future__ import annotations

import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from autograder.bookkeeping.kernels import UnixSocketKernelManager  # the repository is on sys.path (see conftest)


def test_a_notebook_runs_on_a_kernel_without_tcp_ports_and_leaves_no_socket_behind(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import ipykernel, json\n"
        "path = ipykernel.get_connection_file()\n"
        "info = json.load(open(path))\n"
        "print(path); print(info['transport'], info['ip'])")])
    client = NotebookClient(nb, timeout=120, kernel_name="dlcourse", kernel_manager_class=UnixSocketKernelManager,
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    path, line = nb.cells[0].outputs[0].text.split("\n")[:2]
    transport, ip = line.split(" ", 1)
    assert transport == "ipc", line
    assert Path(ip).is_absolute() and Path(ip).parent == Path(path).parent, (ip, path)  # the runtime folder
    assert not Path(path).exists(), "the connection file outlived the kernel"
    assert not list(Path(ip).parent.glob(Path(ip).name + "-*")), "a socket outlived the kernel"
    assert not list(tmp_path.iterdir()), "something was left in the notebook's folder"


def test_each_manager_has_its_own_connection_file():
    first, second = UnixSocketKernelManager(), UnixSocketKernelManager()
    assert first.connection_file != second.connection_file
    assert first.transport == second.transport == "ipc"


def test_run_notebook_writes_the_executed_copy_and_names_the_cell_that_failed(tmp_path):
    from autograder.bookkeeping.kernels import NotebookFailed, main, run_notebook

    good = tmp_path / "good.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import os; print(os.getcwd())")]), good)
    out = tmp_path / "executed.ipynb"
    assert main([str(good), "--out", str(out)]) == 0
    (output,) = nbformat.read(out, as_version=4).cells[0].outputs
    assert output.text.strip() == str(tmp_path), "the notebook did not run in its own folder"

    bad = tmp_path / "bad.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"),
                                                   nbformat.v4.new_code_cell("raise ValueError('target missed')"),
                                                   nbformat.v4.new_code_cell("print('never')")]), bad)
    try:
        run_notebook(bad, timeout=60, out=out)
    except NotebookFailed as err:
        assert "code cell 2 of 3" in str(err) and "target missed" in str(err), err
    else:
        raise AssertionError("a failing notebook ran through")
    cells = nbformat.read(out, as_version=4).cells
    assert cells[0].execution_count == 1 and cells[2].get("execution_count") is None, "the partial run was not kept"
    assert main([str(bad)]) == 1


def test_cells_that_draw_into_output_widgets_do_not_wait_out_their_time_limit(tmp_path):
    """nbclient's plain client can miss a cell's reply while it syncs an Output widget back to the kernel and
    then sleeps until the cell's time limit: 40 such cells at a 15-s limit took 32 s and 47 s in two runs, with
    gaps of exactly 15 s; the steady client takes about 3 s."""
    from autograder.bookkeeping.kernels import SteadyNotebookClient

    draw = ("o = W.Output()\ndisplay(o)\no.clear_output(wait=True)\nwith o:\n    display(HTML('<b>x</b>' * 2000))\n"
            "o.clear_output(wait=True)\nwith o:\n    print('y' * 5000)\n")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import ipywidgets as W\nfrom IPython.display import HTML, display")]
        + [nbformat.v4.new_code_cell(draw) for _ in range(40)])
    starts = []
    SteadyNotebookClient(nb, timeout=20, kernel_name="dlcourse", kernel_manager_class=UnixSocketKernelManager,
                         on_cell_start=lambda cell, cell_index: starts.append(time.monotonic()),
                         resources={"metadata": {"path": str(tmp_path)}}).execute()
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert len(starts) == 41 and max(gaps) < 5, f"a cell waited {max(gaps):.1f} s for its reply"
    widget = nb.cells[1].outputs[0]
    assert widget.output_type == "display_data" and "application/vnd.jupyter.widget-view+json" in widget.data


def test_output_widgets_need_no_stored_widget_state():
    """Without store_widget_state nbclient records no widget, yet its Output-widget hook writes the outputs it
    captured into that record (a KeyError ended chapter 04's full-mode run at the beam-tree widget). The
    steady client hands such a write a throwaway record, and still records nothing."""
    from autograder.bookkeeping.kernels import SteadyNotebookClient

    client = SteadyNotebookClient(nbformat.v4.new_notebook(), kernel_name="dlcourse")
    client.reset_execution_trackers()
    client.widget_state["a-comm-id"]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "x"}]
    assert not client.widget_state
    client.set_widgets_metadata()
    assert "widgets" not in client.nb.metadata
