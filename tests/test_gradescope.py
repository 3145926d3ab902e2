"""The Gradescope package (autograder/platforms/gradescope.py, `make gradescope`), run the way Gradescope runs it.

For two chapters the zip is built once, unpacked into a temporary ``/autograder``-like tree, ``setup.sh`` runs
against this machine's environment (nothing is installed or downloaded) and ``run_autograder`` grades a right,
a wrong, a flagged and a damaged submission in Gradescope's fallback sandbox (the kernel as uid 65534: its
containers refuse bubblewrap's namespaces). Each results.json must follow Gradescope's format (a JSON Schema
written from its specification), give the scores the course's own grader gives the same file, and contain no
line of a hidden test; an answer that opens the source notebook must get nothing from it.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import NamedTuple

import jsonschema
import nbformat
import pytest
from conftest import ROOT, solution_notebook
from kernel import reference_answers, released_notebook

pytestmark = [pytest.mark.pipeline, pytest.mark.xdist_group("gradescope")]

from autograder.core import grade, sandbox  # noqa: E402  (the repository is on sys.path, see conftest)
from autograder.platforms import gradescope  # noqa: E402

CHAPTERS = {"00_welcome": "after_published", "10_optimizers_schedulers": "after_due_date"}
KINDS = ("right", "wrong", "flagged", "damaged")

# Gradescope's results.json, from its autograder specification (gradescope-autograders.readthedocs.io, specs).
_FORMATS = ["text", "html", "simple_format", "md", "ansi"]
_VISIBILITY = ["visible", "hidden", "after_due_date", "after_published"]
_TEST = {
    "type": "object",
    "required": ["score", "max_score", "status", "name", "number", "output", "output_format", "tags",
                 "visibility"],
    "properties": {
        "score": {"type": "number", "minimum": 0}, "max_score": {"type": "number", "minimum": 0},
        "status": {"enum": ["passed", "failed"]}, "name": {"type": "string", "minLength": 1},
        "name_format": {"enum": _FORMATS}, "number": {"type": "string", "pattern": r"^\d+(\.\d+)*$"},
        "output": {"type": "string"}, "output_format": {"enum": _FORMATS},
        "tags": {"type": "array", "items": {"type": "string"}}, "visibility": {"enum": _VISIBILITY},
        "extra_data": {"type": "object"},
    },
    "additionalProperties": False,
}
SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["tests"],
    "properties": {
        "score": {"type": "number", "minimum": 0}, "execution_time": {"type": "number", "minimum": 0},
        "output": {"type": "string"}, "output_format": {"enum": _FORMATS},
        "test_output_format": {"enum": _FORMATS}, "test_name_format": {"enum": _FORMATS},
        "visibility": {"enum": _VISIBILITY}, "stdout_visibility": {"enum": _VISIBILITY},
        "extra_data": {"type": "object"}, "tests": {"type": "array", "items": _TEST},
        "leaderboard": {"type": "array", "items": {"type": "object", "required": ["name", "value"]}},
    },
    "additionalProperties": False,
}


def _mutants(chapter: str) -> dict:
    from test_notebooks import load_mutants

    return load_mutants(chapter)


def _release(chapter: str) -> Path:
    return ROOT / "course" / chapter / f"{chapter}.ipynb"


def _first_exercise(chapter: str) -> str:
    return next(gid.removesuffix("_answer") for gid in reference_answers(chapter))


def _submission(chapter: str, kind: str, root: Path) -> str:
    """The notebook text of one kind of submission: the reference answers, with one planted wrong answer, with
    an escape hatch in the first answer, truncated half-way, or trying to read the source notebook."""
    answers = reference_answers(chapter)
    first = _first_exercise(chapter)
    if kind == "wrong":
        exercise, wrongs = next(iter(_mutants(chapter).items()))
        answers[f"{exercise}_answer"] = wrongs[0][1]
    elif kind == "flagged":
        answers[f"{first}_answer"] += "\nexec('x = 1')\n"
    elif kind == "snoop":  # the answer is defined only if the source notebook could be read
        target = root / "source" / "solutions" / chapter / f"{chapter}.ipynb"
        answers[f"{first}_answer"] = f"_leak = open({str(target)!r}).read()\n" + answers[f"{first}_answer"]
    text = nbformat.writes(released_notebook(chapter, answers))
    return text[: len(text) // 2] if kind == "damaged" else text


def _hidden_lines(chapter: str) -> set[str]:
    """The lines between the hidden-test markers of the chapter's source notebook."""
    found, inside = set(), False
    for cell in nbformat.read(solution_notebook(chapter), as_version=4).cells:
        for line in cell.source.splitlines():
            if "### BEGIN HIDDEN TESTS" in line:
                inside = True
            elif "### END HIDDEN TESTS" in line:
                inside = False
            elif inside and len(line.strip()) >= 8:
                found.add(line.strip())
    return found


def _strings(value) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


class Tree:
    """One chapter's package unpacked into a temporary /autograder, set up, ready to grade submissions."""

    def __init__(self, chapter: str, zip_path: Path) -> None:
        self.chapter = chapter
        self.root = Path(tempfile.mkdtemp(prefix=f"gradescope-{chapter}-"))
        os.chmod(self.root, 0o755)
        source = self.root / "source"
        with zipfile.ZipFile(zip_path) as zf:
            self.names = zf.namelist()
            for info in zf.infolist():  # as unzip does: the modes the zip records
                zf.extract(info, source)
                os.chmod(source / info.filename, (info.external_attr >> 16) & 0o777)
        self.config = json.loads((source / "gradescope.json").read_text())
        self.env = dict(os.environ, DLCOURSE_GRADESCOPE_ROOT=str(self.root), DLCOURSE_GRADESCOPE_PYTHON=sys.executable,
                        DLCOURSE_GRADESCOPE_SANDBOX="user", OMP_NUM_THREADS="1")
        self.setup = subprocess.Popen(["bash", str(source / "setup.sh")], env=self.env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)  # the trees are set up side by side

    def start(self, files: dict[str, str], **env: str) -> tuple[subprocess.Popen, float]:
        """Start run_autograder on a submission folder holding ``files``."""
        folder = self.root / "submission"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        for name, text in files.items():
            (folder / name).write_text(text)
        return subprocess.Popen([str(self.root / "source" / "run_autograder")], env=dict(self.env, **env),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True), time.perf_counter()

    def finish(self, started: tuple[subprocess.Popen, float]) -> tuple[dict, str, float]:
        """Wait for a run started by :meth:`start`: results.json, stdout, seconds."""
        proc, start = started
        stdout, _ = proc.communicate(timeout=900)
        seconds = time.perf_counter() - start
        assert proc.returncode == 0, stdout
        return json.loads((self.root / "results" / "results.json").read_text()), stdout, seconds

    def run(self, files: dict[str, str], **env: str) -> tuple[dict, str, float]:
        return self.finish(self.start(files, **env))


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    """Each chapter's zip built (through the command line), unpacked and set up; the graded submissions."""
    out = tmp_path_factory.mktemp("dist")
    made = {}
    for chapter, hidden in CHAPTERS.items():
        subprocess.run([sys.executable, str(ROOT / "autograder" / "platforms" / "gradescope.py"), "build", "--chapter",
                        chapter,
                        "--hidden", hidden, "--out", str(out)], check=True, capture_output=True, text=True)
        made[chapter] = Tree(chapter, out / f"{chapter}.zip")
    for tree in made.values():
        out, err = tree.setup.communicate(timeout=600)
        tree.setup = subprocess.CompletedProcess(tree.setup.args, tree.setup.returncode, out, err)
    yield made
    for tree in made.values():
        shutil.rmtree(tree.root, ignore_errors=True)


class Known(NamedTuple):
    """The course grader's result on the reference answers, known without grading them again: every point
    (tests/test_notebooks.py grades them in every chapter)."""

    tests: list[SimpleNamespace]
    score: float
    max_score: float


def _full_marks(chapter: str) -> Known:
    points = {c.metadata["nbgrader"]["grade_id"]: float(c.metadata["nbgrader"]["points"])
              for c in nbformat.read(_release(chapter), as_version=4).cells
              if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")}
    total = sum(points.values())
    return Known([SimpleNamespace(grade_id=gid, score=p, points=p) for gid, p in points.items()], total, total)


@pytest.fixture(scope="module")
def graded(trees):
    """(chapter, kind) → (results.json, stdout, seconds, the course grader's result on the same file).

    The course grader grades the wrong, flagged and damaged submissions here, on this side, while the package
    grades them; for the right one its result is known (:func:`_full_marks`)."""
    ok, _ = sandbox.bwrap_available()
    found = {}
    for chapter, tree in trees.items():
        kinds = KINDS + (("snoop",) if chapter == "00_welcome" else ())
        for kind in kinds:
            text = _submission(chapter, kind, tree.root)
            started = tree.start({f"{chapter}.ipynb": text})  # graded by the package while the grader here
            path = tree.root / f"direct-{kind}.ipynb"         # grades the same file
            path.write_text(text)
            direct = None
            if kind == "right":
                direct = _full_marks(chapter)
            elif kind != "snoop":  # (its test grades it without a sandbox instead, as a control)
                direct, _ = grade.grade(_release(chapter), path, solution_notebook(chapter), chapter=chapter,
                                        sandbox=sandbox.Sandbox(unsafe=not ok))
            found[chapter, kind] = (*tree.finish(started), direct)
    return found


def _by_grade_id(tree: Tree, data: dict) -> dict[str, dict]:
    numbers = {t["number"]: t["grade_id"] for t in tree.config["tests"]}
    return {numbers[t["number"]]: t for t in data["tests"]}


def test_the_zip_has_gradescopes_layout_and_setup_runs_here(trees):
    for chapter, tree in trees.items():
        assert tree.setup.returncode == 0, tree.setup.stdout + tree.setup.stderr
        assert "already installed" in tree.setup.stdout and "sandbox" in tree.setup.stdout
        assert {"setup.sh", "run_autograder", "gradescope.json", "requirements.txt"} <= set(tree.names)
        assert f"course/{chapter}/{chapter}.ipynb" in tree.names
        assert f"solutions/{chapter}/{chapter}.ipynb" in tree.names and "autograder/core/grade.py" in tree.names
        assert not [n for n in tree.names if n.startswith(("solutions/", "course/")) and chapter not in n]
        source = tree.root / "source"
        for script in ("setup.sh", "run_autograder"):
            assert os.stat(source / script).st_mode & 0o111, f"{script} is not executable"
        for grader_only in ("autograder", "solutions"):  # setup.sh locked them
            info = os.stat(source / grader_only)
            assert (stat.S_IMODE(info.st_mode), info.st_uid) == (0o700, 0), grader_only
        assert os.stat(source / "dlcourse" / "__init__.py").st_mode & 0o004
        # the sandbox chosen by itself: this interpreter's course package is the repository's, not the tree's, and
        # bubblewrap would show the kernel the tree's only — so not bubblewrap (whose kernel could not import it)
        auto = {k: v for k, v in tree.env.items() if k != "DLCOURSE_GRADESCOPE_SANDBOX"}
        said = subprocess.run([sys.executable, str(source / "autograder" / "platforms" / "gradescope.py"), "check",
                               "--root", str(tree.root)], env=auto, capture_output=True, text=True, timeout=300)
        assert said.returncode == 0, said.stdout + said.stderr
        assert "bubblewrap namespaces" not in said.stdout, said.stdout
        if sandbox.bwrap_available()[0]:
            assert f"installed from {ROOT / 'dlcourse'}" in said.stdout, said.stdout


@pytest.mark.parametrize("chapter", list(CHAPTERS))
@pytest.mark.parametrize("kind", KINDS)
def test_results_follow_gradescopes_format_and_the_course_graders_scores(graded, trees, chapter, kind):
    data, stdout, _, direct = graded[chapter, kind]
    tree = trees[chapter]
    jsonschema.Draft202012Validator(SCHEMA).validate(data)
    entries = _by_grade_id(tree, data)
    graded_cells = [c.metadata["nbgrader"]["grade_id"] for c in nbformat.read(_release(chapter), as_version=4).cells
                    if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")]
    assert list(entries) == graded_cells  # one entry per graded test cell, in notebook order
    assert [t["number"] for t in data["tests"]] == [e["number"] for e in tree.config["tests"]]
    for gid, entry in entries.items():
        hidden = gid.endswith("_hidden")
        assert entry["name"].endswith(": hidden tests" if hidden else ": visible tests")
        assert entry["visibility"] == (CHAPTERS[chapter] if hidden else "visible")
    scores = {t.grade_id: (t.score, t.points) for t in direct.tests}
    assert {gid: (e["score"], e["max_score"]) for gid, e in entries.items()} == scores
    assert data["score"] == sum(e["score"] for e in entries.values()) == direct.score
    assert data["stdout_visibility"] == "hidden" and data["execution_time"] >= 1
    assert f"{data['score']:g} / {direct.max_score:g}" in data["output"]
    assert "as uid 65534" in stdout and "WITHOUT a sandbox" not in data["output"]
    first = _first_exercise(chapter)
    if kind == "right":
        assert data["score"] == direct.max_score and all(e["status"] == "passed" for e in entries.values())
    elif kind == "wrong":
        exercise = next(iter(_mutants(chapter)))
        assert entries[f"{exercise}_hidden"]["score"] == 0 and entries[f"{exercise}_hidden"]["status"] == "failed"
        assert entries[f"{exercise}_hidden"]["output"].strip()
    elif kind == "flagged":
        for gid in (f"{first}_visible", f"{first}_hidden"):
            assert entries[gid]["score"] == 0 and entries[gid]["tags"] == ["needs manual review"]
            assert "exec" in entries[gid]["output"] and "set its score" in entries[gid]["output"]
        assert "Needs manual review" in data["output"] and "exec" in data["output"]
        others = [e for gid, e in entries.items() if not gid.startswith(first + "_")]
        assert all(e["status"] == "passed" for e in others)
    else:
        assert "not valid JSON" in data["output"]


@pytest.mark.parametrize("chapter", list(CHAPTERS))
def test_no_hidden_test_line_reaches_the_results(graded, trees, chapter):
    secret = _hidden_lines(chapter)
    assert secret
    for kind in KINDS:
        data = graded[chapter, kind][0]
        text = "\n".join(_strings(data))
        leaked = [line for line in secret if line in text]
        assert not leaked, f"{kind}: hidden test lines in results.json: {leaked[:3]}"
        assert "BEGIN HIDDEN TESTS" not in text and "BEGIN SOLUTION" not in text


def test_the_kernel_cannot_read_the_source_notebook(graded, trees):
    chapter = "00_welcome"
    data, _, _, _ = graded[chapter, "snoop"]
    jsonschema.Draft202012Validator(SCHEMA).validate(data)
    first = _first_exercise(chapter)
    entries = _by_grade_id(trees[chapter], data)
    assert entries[f"{first}_visible"]["score"] == entries[f"{first}_hidden"]["score"] == 0
    assert "NameError" in entries[f"{first}_visible"]["output"]  # the read failed, so nothing was defined
    assert all(e["status"] == "passed" for gid, e in entries.items() if not gid.startswith(first + "_"))
    text = json.dumps(data)
    assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text
    # Control: without a sandbox the same answer reads the file and earns the exercise's points.
    path = trees[chapter].root / "direct-snoop.ipynb"
    unsafe, _ = grade.grade(_release(chapter), path, solution_notebook(chapter), chapter=chapter,
                            sandbox=sandbox.Sandbox(unsafe=True))
    assert {t.grade_id: t.score for t in unsafe.tests}[f"{first}_hidden"] > 0


def test_no_notebook_several_notebooks_a_crash_and_a_dead_python_still_give_valid_results(trees):
    tree = trees["00_welcome"]
    right = _submission("00_welcome", "right", tree.root)
    cases = {
        "no notebook": ({"notes.txt": "my answers"}, {}, "no notebook"),
        "several": ({"a.ipynb": right, "b.ipynb": right}, {}, "Upload only 00_welcome.ipynb"),
        "grader crash": ({"00_welcome.ipynb": right}, {"DLCOURSE_GRADESCOPE_SANDBOX": "bogus"}, "the grader failed"),
        "no python": ({"00_welcome.ipynb": right}, {"DLCOURSE_GRADESCOPE_PYTHON": "/bin/false"}, "stopped before"),
    }
    for what, (files, env, said) in cases.items():
        data, _, _ = tree.run(files, **env)
        jsonschema.Draft202012Validator(SCHEMA).validate(data)
        assert len(data["tests"]) == len(tree.config["tests"]), what
        assert data["score"] == 0 and all(t["score"] == 0 and t["status"] == "failed" for t in data["tests"]), what
        assert said in data["output"] and all(t["output"].startswith("Not graded") for t in data["tests"]), what


def test_which_notebook_is_graded(tmp_path):
    (tmp_path / "sub").mkdir()
    for name in ("sub/07_gan.ipynb", "scratch.ipynb", ".ipynb_checkpoints/07_gan-checkpoint.ipynb"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("{}")
    assert gradescope.find_submission(tmp_path, "07_gan") == (tmp_path / "sub" / "07_gan.ipynb", "")
    (tmp_path / "sub" / "07_gan.ipynb").unlink()
    path, note = gradescope.find_submission(tmp_path, "07_gan")
    assert path == tmp_path / "scratch.ipynb" and "expected name is 07_gan.ipynb" in note
    (tmp_path / "other.ipynb").write_text("{}")
    path, note = gradescope.find_submission(tmp_path, "07_gan")
    assert path is None and "2 notebooks" in note and "Upload only 07_gan.ipynb" in note


def test_results_name_flagged_exercises_and_hide_hidden_lines():
    release = nbformat.read(_release("00_welcome"), as_version=4)
    config = {"chapter": "00_welcome", "tests": gradescope.test_entries(release, "hidden")}
    secret = gradescope.hidden_lines(nbformat.read(solution_notebook("00_welcome"), as_version=4), release)
    line = sorted(secret)[0]
    scores = {e["grade_id"]: (e["max_score"], "passed") for e in config["tests"]}
    scores["ce_hidden"] = (0.0, f"AssertionError at\n{line}\n(the rest)")
    data = gradescope.results_json(config, scores, {"softmax": ["use of exec"]}, ["a note"], seconds=3.2,
                                   secret=secret)
    jsonschema.Draft202012Validator(SCHEMA).validate(data)
    tests = {t["number"]: t for t in data["tests"]}
    assert [t["visibility"] for t in data["tests"]] == ["visible", "hidden"] * 3
    assert tests["1.1"]["score"] == tests["1.2"]["score"] == 0 and tests["1.2"]["tags"] == ["needs manual review"]
    assert line not in json.dumps(data) and "[hidden test]" in tests["2.2"]["output"]
    assert data["score"] == 1 + 1 + 3 and "Needs manual review: 1 · A numerically stable softmax" in data["output"]
    assert "a note" in data["output"] and data["execution_time"] == 3


def test_a_kernel_run_as_an_unprivileged_user_cannot_enter_a_root_only_folder(tmp_path):
    from autograder.core.trusted import GradingKernel

    ok, why = sandbox.user_switch_available()
    assert ok, why
    locked = Path(tempfile.mkdtemp(prefix="root-only-"))  # under /tmp: the way there is open to everyone
    try:
        (locked / "secret.txt").write_text("the solutions")
        os.chmod(locked, 0o700)
        box = sandbox.Sandbox(user=sandbox.NOBODY)
        command = box.command(["python"], tmp_path)
        assert "setpriv" in command and "bwrap" not in command and "--reuid=65534" in command
        assert "setpriv" not in sandbox.Sandbox().command(["python"], tmp_path)  # bubblewrap's path is unchanged
        kernel = GradingKernel(box)
        try:
            kernel.start()
            run = kernel.run_cell(f"import os\nprint(os.getuid(), os.getgid())\nopen({str(locked)!r} + '/secret.txt')",
                                  60)
            # nor write where the grader makes its sockets (only its own folders there are its)
            write = kernel.run_cell(f"open({str(kernel.exchange / 'agent-9.sock')!r}, 'w')", 60)
            test = kernel.run_test("assert os.getuid() == 0", "import os", 60)  # the tests run in the grader (root)
        finally:
            kernel.close()
        assert run.stdout.split() == ["65534", "65534"]
        assert run.error is not None and run.error[0] == "PermissionError"
        assert write.error is not None and write.error[0] == "PermissionError"
        assert test.passed, test.message
    finally:
        shutil.rmtree(locked)
