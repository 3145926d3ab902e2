"""What `make setup` leaves in the virtual environment, beyond the pinned packages themselves."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from conftest import ROOT


def test_no_process_pays_for_the_iri_format_checker():
    """jsonschema's optional ``rfc3987-syntax`` builds a parser on import (about 2 s in every grader, nbgrader
    command and Jupyter server that imports nbformat); setup removes it, and nbformat still validates."""
    assert importlib.util.find_spec("rfc3987_syntax") is None, (
        "rfc3987-syntax is installed: run `make setup` again (it removes it after installing requirements.txt)")
    for script in (ROOT / "Makefile", ROOT / "autograder" / "platforms" / "templates" / "gradescope" / "setup.sh"):
        assert "uninstall --quiet --yes rfc3987-syntax" in script.read_text(), script
    code = ("import nbformat, sys; nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('1')]); "
            "nbformat.validate(nb); print('rfc3987_syntax' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stdout + done.stderr


def test_jupytexts_jupyterlab_parts_stay_off():
    """jupytext is installed for autograder/bookkeeping/nbtext.py only: JupyterLab (the lab, lectures, formgrader,
    the browser tests) loads neither its server extension nor its front-end."""
    jupyter = Path(sys.executable).parent / "jupyter"
    server = subprocess.run([str(jupyter), "server", "extension", "list"], capture_output=True, text=True,
                            timeout=120)
    states = [line for line in (server.stdout + server.stderr).splitlines()  # its state; then "OK" if it imports
              if line.split()[:1] == ["jupyterlab_jupytext"] and "OK" not in line]
    assert not [line for line in states if "enabled" in line], states  # listed as disabled, or not at all
    lab = subprocess.run([str(jupyter), "labextension", "list"], capture_output=True, text=True, timeout=120)
    entry = [line for line in (lab.stdout + lab.stderr).splitlines() if "jupyterlab-jupytext v" in line]
    assert entry and "disabled" in entry[0], entry
