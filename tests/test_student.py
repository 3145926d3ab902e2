"""The student's path without make, bash or root: ``python -m dlcourse setup | lab | validate | fetch | doctor``.

The commands are run from a copy of the student bundle outside the repository, as an account that is not root
(``nobody`` when the suite runs as root), with a ``PATH`` that holds only the environment's own ``bin``: no make,
no bash, no system tools. What students install is ``requirements-student.txt``: its pins are the course's
own, and it covers every package the modules and notebooks students run import.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import nbformat
import pytest
from conftest import ROOT
from kernel import reference_answers, released_notebook
from test_portable import _path, student_modules

from autograder.bookkeeping import pipeline
from autograder.platforms import hub  # the repository is on sys.path (see conftest)
from dlcourse import student

# the import name of a third-party package → the distribution that provides it (where the two differ)
# (or that brings it in: Pillow comes with matplotlib, traitlets with nbgrader, jupyter_core with jupyter_client)
DISTRIBUTIONS = {"sklearn": "scikit-learn", "PIL": "matplotlib", "IPython": "ipykernel", "traitlets": "nbgrader",
                 "jupyter_core": "jupyter-client"}
NOT_NEEDED_BY_STUDENTS = {"threadpoolctl", "jupytext", "jupyterlab-deck", "jupyterlab-fonts",
                          "jupyterhub", "dask", "distributed", "pytest", "pytest-xdist", "ruff",
                          "playwright", "colorspacious",
                          "sphinx", "myst-parser", "myst-nb", "sphinx-book-theme", "pydata-sphinx-theme"}  # make site


def test_the_student_requirements_are_the_course_pins():
    course, students = student.pins(ROOT / "requirements.txt"), student.pins()
    assert students, "requirements-student.txt lists no pinned package"
    for name, version in students.items():
        assert course.get(name) == version, f"{name}: {version} for students, {course.get(name)} for the course"
    left_out = set(course) - set(students)
    assert left_out == NOT_NEEDED_BY_STUDENTS, ("what the student requirements leave out changed: "
                                                f"{sorted(left_out ^ NOT_NEEDED_BY_STUDENTS)}")


def _third_party(source: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return {n for n in found if n not in sys.stdlib_module_names and n != "dlcourse"}


def test_the_student_requirements_cover_what_students_import():
    imported = set()
    for module in student_modules() | {"dlcourse.student", "dlcourse.validate", "dlcourse.kernelio"}:
        imported |= _third_party(_path(module).read_text())
    for notebook in sorted((ROOT / "course").glob("*/*.ipynb")):
        for cell in nbformat.read(notebook, as_version=4).cells:
            if cell.cell_type == "code":
                try:
                    imported |= _third_party(cell.source)
                except SyntaxError:  # a skeleton with a placeholder
                    continue
    wanted = set(student.pins())
    missing = sorted(name for name in imported
                     if DISTRIBUTIONS.get(name, name).lower().replace("_", "-") not in wanted)
    assert not missing, f"imported where students run, but not in requirements-student.txt: {missing}"


def test_setup_runs_this_python_s_own_tools_and_names_each_step(capsys):
    assert student.setup(dry_run=True) == 0
    said = capsys.readouterr().out
    commands = [line.strip() for line in said.splitlines() if line.startswith("  ")]
    assert len(commands) == 4, said
    assert all(c.startswith(sys.executable + " -m ") for c in commands), commands  # no make, no shell, no sudo
    assert "requirements-student.txt" in commands[0] and "-e " + str(ROOT) in commands[1], commands
    assert "ipykernel install" in commands[2] and "--name dlcourse" in commands[2], commands
    assert commands[3].endswith("-m dlcourse fetch"), commands


def test_doctor_names_the_command_that_fixes_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.setattr(student, "ROOT", tmp_path)  # no course/ here
    from dlcourse import assets

    monkeypatch.setattr(assets, "MODELS_DIR", tmp_path / "models")
    monkeypatch.setattr(student, "pins", lambda path=None: {"torch": "2.13.0", "no-such-package-here": "1.0"})
    findings = {f.what: f for f in student.doctor()}
    assert findings["packages"].ok is False and "missing: no-such-package-here" in findings["packages"].found
    assert "`python -m dlcourse setup`" in findings["packages"].line()
    assert findings["torch"].ok and findings["device"].ok and findings["data"].ok
    model = findings["model all-minilm-l6-v2"]
    assert not model.ok and model.line().endswith("→ run `python -m dlcourse fetch`"), model.line()
    assert not findings["chapters"].ok


def test_lab_opens_course_without_the_instructor_tools():
    command, env = student.lab_command(["--no-browser"])
    assert command[:3] == [sys.executable, "-m", "jupyterlab"] and command[-1] == "--no-browser"
    assert f"--notebook-dir={ROOT / 'course'}" in command
    assert any('"nbgrader.server_extensions.formgrader": False' in part for part in command)
    assert ("--allow-root" in command) == (os.geteuid() == 0), command  # Jupyter refuses root without it
    assert env["JUPYTER_CONFIG_PATH"].split(os.pathsep)[0] == str(ROOT / "deploy" / "lab")
    assert env["HF_HUB_OFFLINE"] == "1"


# ------------------------------------------------------------------ the bundle, as another account, no make or bash


@pytest.fixture(scope="module")
def as_a_student():
    """The unpacked student bundle in a home of its own, and a runner for commands as a student would type them:
    not root, ``PATH`` = the environment's ``bin`` only, the course package the bundle's own."""
    home = Path(tempfile.mkdtemp(prefix="dlcourse-student-", dir="/tmp"))  # pytest's own folder is closed to others
    with zipfile.ZipFile(pipeline.bundle(home / "bundle.zip")) as zf:
        zf.extractall(home)
    (home / "bundle.zip").unlink()
    course = home / "dlcourse-student"
    root = os.geteuid() == 0
    closed = {p: stat.S_IMODE(p.stat().st_mode) for p in hub.closed_ancestors()} if root else {}
    if root:  # the way to this Python (often in root's home) opened for entering, not listing; closed again after
        for path, mode in closed.items():
            path.chmod(mode | stat.S_IXOTH)
        for path in [home, *home.rglob("*")]:
            os.chown(path, 65534, 65534, follow_symlinks=False)
    env = {"PATH": str(Path(sys.executable).parent), "HOME": str(home), "PYTHONPATH": str(course),
           "DLCOURSE_FAST": "1", "LANG": "C.UTF-8"}

    def run(*args: str, timeout: float = 600, **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run([str(Path(sys.executable).parent / "python"), *args], cwd=course, env=env,
                              capture_output=True, text=True, timeout=timeout,
                              **({"user": 65534, "group": 65534, "extra_groups": []} if root else {}), **kwargs)

    try:
        yield course, run, env
    finally:
        for path, mode in closed.items():
            path.chmod(mode)
        shutil.rmtree(home, ignore_errors=True)


@pytest.mark.pipeline
@pytest.mark.xdist_group("hub")  # the hub's tests open the same way to Python: one at a time
def test_a_student_without_make_or_bash_checks_the_machine_and_validates(as_a_student):
    course, run, env = as_a_student
    who = run("-c", "import os, shutil; print(os.geteuid(), shutil.which('make'), shutil.which('bash'), "
                    "shutil.which('sh'))")
    uid, make, bash, sh = who.stdout.split()
    assert uid != "0" and make == bash == sh == "None", who.stdout + who.stderr
    # doctor: the bundle has no models yet; it says so, with the command, and the exit status says it too
    doctor = run("-m", "dlcourse", "doctor")
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    assert re.search(r"!! model all-minilm-l6-v2: .*missing.*→ run `python -m dlcourse fetch`", doctor.stdout), \
        doctor.stdout
    assert "ok data: " in doctor.stdout and "ok kernel: 'dlcourse' registered" in doctor.stdout, doctor.stdout
    assert f"12 notebooks under {course / 'course'}" in doctor.stdout, doctor.stdout
    (course / "models").rmdir() if (course / "models").is_dir() else None
    (course / "models").symlink_to(ROOT / "models", target_is_directory=True)  # what `fetch` would have put there
    doctor = run("-m", "dlcourse", "doctor")
    assert doctor.returncode == 0 and "everything a chapter needs is here" in doctor.stdout, doctor.stdout
    # validate: chapter 00 with the reference answers passes; with a wrong one it fails and names the test
    nb = released_notebook("00_welcome", reference_answers("00_welcome"))
    target = course / "course" / "00_welcome" / "mine.ipynb"
    nbformat.write(nb, target)
    if os.geteuid() == 0:
        os.chown(target, 65534, 65534)
    done = run("-m", "dlcourse", "validate", str(target))
    assert done.returncode == 0, done.stdout + done.stderr
    wrong = reference_answers("00_welcome")
    wrong["softmax_answer"] = wrong["softmax_answer"].replace("return", "return 2 *", 1)
    nbformat.write(released_notebook("00_welcome", wrong), target)
    done = run("-m", "dlcourse", "validate", str(target))
    assert done.returncode == 1 and "softmax" in done.stdout + done.stderr, done.stdout + done.stderr


@pytest.mark.pipeline
@pytest.mark.xdist_group("hub")
def test_a_student_without_make_or_bash_starts_jupyterlab(as_a_student):
    course, _, env = as_a_student
    python = str(Path(sys.executable).parent / "python")
    root = os.geteuid() == 0
    process = subprocess.Popen([python, "-m", "dlcourse", "lab", "--no-browser", "--port=0",
                                "--ServerApp.port_retries=50"], cwd=course, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True,
                               **({"user": 65534, "group": 65534, "extra_groups": []} if root else {}))
    seen = []
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line and process.poll() is not None:
                break
            seen.append(line)
            if re.search(r"http://(127\.0\.0\.1|localhost):\d+/lab", line):
                break
        said = "".join(seen)
        assert re.search(r"http://(127\.0\.0\.1|localhost):\d+/lab", said), said
        assert str(course / "course") in said, said  # serving the bundle's course/, nothing above it
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
    shutil.rmtree(course / ".ipynb_checkpoints", ignore_errors=True)


def test_the_makefile_s_student_targets_call_the_student_commands():
    makefile = (ROOT / "Makefile").read_text()
    for target, command in [("lab", "-m dlcourse lab"), ("validate", "-m dlcourse validate"),
                            ("setup", "-m dlcourse fetch")]:
        body = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
        assert body and command in body.group(1), f"make {target} does not run `python {command}`"
    for page in ("README.md", "docs/guides/students.md"):
        assert json.dumps("python -m dlcourse setup")[1:-1] in (ROOT / page).read_text(), page


def test_kernel_sockets_fit_the_length_of_a_socket_path_under_a_deep_home(tmp_path):
    """``validate`` talks to its kernel over Unix sockets named in Jupyter's runtime folder; under a deep home
    (a long user name on macOS) their paths would pass the system's limit and the kernel could not start."""
    import uuid

    from dlcourse import kernelio

    deep = tmp_path / ("a-long-folder-name-" * 4) / ".local" / "share" / "jupyter" / "runtime"
    folder = kernelio.socket_folder(deep)
    longest = folder / f"kernel-{uuid.uuid4()}-ipc-99"
    assert folder != deep and len(str(longest)) <= kernelio.SOCKET_PATH_LIMIT, longest
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700  # the sockets' folder is this user's alone
    folder.rmdir()
    short = Path(tempfile.mkdtemp(dir="/tmp")) / "rt"
    try:
        assert kernelio.socket_folder(short) == short and short.is_dir()
    finally:
        shutil.rmtree(short.parent)
