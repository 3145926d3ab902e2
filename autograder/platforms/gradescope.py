"""Gradescope's autograder for one chapter, graded by the course's own trusted grader.

``make gradescope CH=07_gan`` (``build``) writes ``dist/gradescope/07_gan.zip`` in the layout of Gradescope's
autograder specification: ``setup.sh`` and ``run_autograder`` at its root, and beside them what grading
needs, laid out as in this repository — the course package, ``data/``, the chapter's release under
``course/``, its source notebook (solutions and hidden tests) under ``solutions/`` and the grader under
``autograder/``. Gradescope unpacks it into ``/autograder/source``, runs ``setup.sh`` once and then, for each
submission, ``run_autograder``, which calls ``run`` here: the notebook under ``/autograder/submission/`` is
graded with :func:`grade.grade` (the release gives the cells, the source notebook the hidden tests, the
chapter's oracle declarations the static checks) and ``/autograder/results/results.json`` is written — one
test per graded cell, named after its exercise as the course's feedback names it, with the grader's
message; hidden tests' sources never leave the grader.

The kernel runs in the bubblewrap sandbox where it can be had; Gradescope's containers usually refuse its
namespaces, and then the kernel runs as an unprivileged user (:class:`sandbox.Sandbox` ``user=``) while the
grader and the source notebook sit in folders only root may enter (``check`` and ``run`` set the modes).
Without either, the submission is graded unsandboxed and the results say so.

    python autograder/platforms/gradescope.py build --chapter 07_gan [--hidden after_published] [--out dist/gradescope]
    python autograder/platforms/gradescope.py run   [--root /autograder]     # inside Gradescope (run_autograder)
    python autograder/platforms/gradescope.py check [--root /autograder]     # modes set, and which sandbox grading gets
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import stat
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parents[1]  # the repository, or /autograder/source inside Gradescope
if str(SOURCE) not in sys.path:  # run as a script: the `autograder` package is imported from the repository
    sys.path.insert(0, str(SOURCE))

CONFIG = "gradescope.json"
FALLBACK = "gradescope_fallback.json"
TEMPLATES = HERE / "templates" / "gradescope"
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
DEFAULT_HIDDEN = "after_published"
REVIEW_TAG = "needs manual review"
# What the kernel must not read (root only, mode 0700) and what a student has anyway (readable by everyone).
GRADER_ONLY = ("autograder", "solutions")
STUDENT_READABLE = ("dlcourse", "data", "models", "course")
# Files of the repository the package carries besides the chapter's folders.
TOP_FILES = ("requirements.txt", "pyproject.toml", "README.md", "LICENSE")
# A chapter needs a pretrained model when its notebooks name it (models/<name>, fetched by setup.sh).
MODEL_NAMES = {"all-minilm-l6-v2": ("minilm",), "smollm2-135m-instruct": ("smollm",)}
CELL_TIMEOUT = 300.0
SUBMISSION_TIMEOUT = 480.0
STARTUP_ALLOWANCE = 120  # seconds run_autograder allows beyond the grader's own limit (imports, kernel start)
SANDBOX_ENV = "DLCOURSE_GRADESCOPE_SANDBOX"  # auto (default) | bwrap | user | unsafe
MIN_HIDDEN_LINE = 8  # shorter hidden-test lines (a bracket, `x = 1`) are not worth hiding on their own


# ------------------------------------------------------------------------------------------- the tests


def test_entries(release: Any, hidden: str = DEFAULT_HIDDEN) -> list[dict[str, Any]]:
    """One entry per graded test cell of a release notebook, in notebook order: its grade id and exercise,
    the name feedback gives it ("<exercise title>: visible tests"), its Gradescope number ("<exercise>.<test>"),
    its points and visibility (visible tests ``visible``, the others ``hidden``)."""
    from autograder.bookkeeping.course_preprocessors import ExerciseNames

    named, _ = ExerciseNames().preprocess(copy.deepcopy(release), {})
    entries: list[dict[str, Any]] = []
    exercises: dict[str, int] = {}
    for cell in named.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or not meta.get("grade") or meta.get("solution"):
            continue
        label = cell.metadata.get("dlcourse", {})
        exercise = label.get("exercise") or meta["grade_id"]
        number = exercises.setdefault(exercise, len(exercises) + 1)
        within = sum(e["exercise"] == exercise for e in entries) + 1
        visible = meta["grade_id"].endswith("_visible")
        entries.append({"grade_id": meta["grade_id"], "exercise": exercise, "title": label.get("title") or exercise,
                        "name": label.get("label") or meta["grade_id"], "number": f"{number}.{within}",
                        "max_score": float(meta.get("points", 0) or 0),
                        "visibility": "visible" if visible else hidden})
    return entries


def hidden_lines(source: Any, release: Any) -> set[str]:
    """The lines of the source notebook's test cells that the release does not show (the hidden tests),
    stripped; those too short to give anything away are left out."""
    shown = {line.strip() for cell in release.cells for line in cell.source.splitlines()}
    found = set()
    for cell in source.cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
            found |= {line.strip() for line in cell.source.splitlines()}
    return {line for line in found - shown if len(line) >= MIN_HIDDEN_LINE and "HIDDEN TESTS" not in line}


def redact(text: str, secret: set[str]) -> str:
    """``text`` with every hidden-test line it contains replaced (the grader's messages name values, not
    sources; this makes sure)."""
    for line in secret:
        if line in text:
            text = text.replace(line, "[hidden test]")
    return text


# -------------------------------------------------------------------------------------------- results


def results_json(config: dict[str, Any], scores: dict[str, tuple[float, str]] | None = None,
                 flagged: dict[str, list[str]] | None = None, notices: list[str] | None = None,
                 problem: str = "", seconds: float = 0.0, secret: set[str] | None = None,
                 warning: str = "", extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Gradescope's results for the chapter's tests (``config["tests"]``).

    ``scores``: grade id → (score, the grader's message); ``flagged``: exercise → why it goes to a person (its
    tests score 0 and say so); ``problem``: why nothing could be graded (every test scores 0 and says it);
    ``warning``: what the student must know about how it was graded (no sandbox)."""
    flagged, notices, secret, scores = flagged or {}, notices or [], secret or set(), scores or {}
    problem = redact(problem, secret)
    tests, review = [], {}
    for entry in config["tests"]:
        score, tags = 0.0, []
        if problem:
            output = f"Not graded: {problem}"
        elif entry["exercise"] in flagged:
            reasons = "; ".join(dict.fromkeys(flagged[entry["exercise"]]))
            review[entry["title"]] = reasons
            tags = [REVIEW_TAG]
            output = (f"Not credited by the autograder: this exercise was flagged for review ({reasons}), so the "
                      "grader did not run or did not credit its answer. A person will look at it and set its score.")
        elif entry["grade_id"] in scores:
            score, message = scores[entry["grade_id"]]
            output = redact(message, secret)
        else:
            output = "Not graded: the grader did not reach this test."
        tests.append({"name": entry["name"], "number": entry["number"], "score": score,
                      "max_score": entry["max_score"], "status": "passed" if score >= entry["max_score"] else "failed",
                      "output": output, "output_format": "text", "tags": tags, "visibility": entry["visibility"]})
    total, possible = sum(t["score"] for t in tests), sum(t["max_score"] for t in tests)
    lines = [f"Chapter {config['chapter']}: {total:g} / {possible:g} points from the autograder."]
    if warning:
        lines.append(warning)
    if problem:
        lines.append(f"Nothing was graded: {problem}")
    for title, reasons in review.items():
        lines.append(f"Needs manual review: {title} — the autograder did not run or did not credit it ({reasons}); "
                     "a person will set its score.")
    other = {ex: r for ex, r in flagged.items() if ex not in {e["exercise"] for e in config["tests"]}}
    for where, reasons in other.items():
        lines.append(f"For review: {where}: {'; '.join(dict.fromkeys(reasons))}")
    if notices:
        lines.append("Notes from the grader:")
        lines += [f"* {redact(n, secret)}" for n in notices]
    data = {"score": total, "output": "\n".join(lines), "output_format": "text",
            "execution_time": int(round(seconds)), "visibility": "visible", "stdout_visibility": "hidden",
            "tests": tests}
    if extra:
        data["extra_data"] = extra
    return data


def find_submission(folder: Path, chapter: str) -> tuple[Path | None, str]:
    """The submitted notebook (``<chapter>.ipynb`` if there is one, else the only notebook) and a note on it,
    or None and what is wrong."""
    wanted = f"{chapter}.ipynb"
    found = sorted(p for p in folder.rglob("*.ipynb") if p.is_file() and ".ipynb_checkpoints" not in p.parts) \
        if folder.is_dir() else []
    named = [p for p in found if p.name == wanted]
    if len(named) == 1:
        return named[0], ""
    if len(found) == 1 and not named:
        return found[0], f"graded {found[0].name} (the expected name is {wanted})"
    if not found:
        return None, f"no notebook (.ipynb) was submitted. Upload {wanted}, the chapter's notebook with your answers."
    names = ", ".join(str(p.relative_to(folder)) for p in found[:10])
    return None, f"{len(found)} notebooks were submitted ({names}) and none is the one {wanted}. Upload only {wanted}."


# ----------------------------------------------------------------------------------- permissions, sandbox


def lock_down(root: Path, source: Path = SOURCE) -> list[str]:
    """Make the grader and the source notebook root's alone (mode 0700) and what a student has readable by
    everyone, so that a kernel run as an unprivileged user reads the one and not the other. Returns what it
    could not do (nothing as root)."""
    if os.geteuid() != 0:
        return ["not root: file modes left as they are"]
    problems = []
    for name in GRADER_ONLY:
        path = source / name
        if path.is_dir():
            os.chown(path, 0, 0)
            os.chmod(path, 0o700)
    for name in STUDENT_READABLE:
        path = source / name
        for item in [path, *path.rglob("*")] if path.exists() else []:
            try:
                mode = item.lstat().st_mode
                if stat.S_ISLNK(mode):
                    continue
                wanted = mode | 0o444 | (0o111 if stat.S_ISDIR(mode) else 0)
                if wanted != mode:
                    os.chmod(item, stat.S_IMODE(wanted))
            except OSError as err:
                problems.append(f"{item}: {err}")
    for folder in (root, source):  # the way to what a student has: entered by everyone, written by root only
        if folder.is_dir():
            os.chmod(folder, stat.S_IMODE(folder.stat().st_mode) | 0o111)
    results = root / "results"
    results.mkdir(parents=True, exist_ok=True)
    os.chmod(results, 0o755)
    return problems


def _package_folder() -> Path:
    """Where a kernel of this interpreter imports the course package from (setup.sh installs this folder's,
    editable). Asked of a fresh interpreter outside this folder: this process has the folder on ``sys.path``
    (for the ``autograder`` package), which would always answer "here"."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", "import dlcourse; print(dlcourse.__file__)"], cwd="/", env=env,
                          capture_output=True, text=True, timeout=120)
    if done.returncode:
        raise RuntimeError(f"the course package cannot be imported by {sys.executable}: {done.stderr.strip()[-300:]}")
    return Path(done.stdout.strip()).resolve().parent


def choose_sandbox() -> tuple[Any, str, str]:
    """The sandbox grading gets here: bubblewrap, else the kernel as an unprivileged user, else none.
    Returns it, a line saying which, and a warning for the results when there is none.
    ``DLCOURSE_GRADESCOPE_SANDBOX`` (bwrap, user or unsafe) asks for one; it fails when it cannot be had."""
    from autograder.core import sandbox

    wanted = os.environ.get(SANDBOX_ENV, "auto")
    if wanted not in ("auto", "bwrap", "user", "unsafe"):
        raise ValueError(f"{SANDBOX_ENV}={wanted!r}: use auto, bwrap, user or unsafe")
    why_not = []
    if wanted in ("auto", "bwrap"):
        ok, why = sandbox.bwrap_available()
        package = _package_folder()
        if ok and package != SOURCE / "dlcourse":  # bubblewrap shows the kernel this folder's package only
            ok, why = False, f"the course package is installed from {package}, which bubblewrap would not show"
        if ok:
            return sandbox.Sandbox(), "sandbox: bubblewrap namespaces", ""
        if wanted == "bwrap":
            raise RuntimeError(f"the bubblewrap sandbox was asked for and cannot be had: {why}")
        why_not.append(why)
    if wanted in ("auto", "user"):
        ok, why = sandbox.user_switch_available()
        if ok:
            return (sandbox.Sandbox(user=sandbox.NOBODY),
                    f"sandbox: {'no namespaces here (' + why_not[0] + ')' if why_not else SANDBOX_ENV + '=user'}; "
                    f"the kernel runs as uid {sandbox.NOBODY} and cannot enter the grader's folders", "")
        if wanted == "user":
            raise RuntimeError(f"running the kernel as an unprivileged user was asked for and cannot be had: {why}")
        why_not.append(why)
    warning = ("WARNING: this submission was graded WITHOUT a sandbox (" + "; ".join(why_not or ["asked for"]) +
               "): its code could read the grader's files (your instructor sees this note too).")
    return sandbox.Sandbox(unsafe=True), "sandbox: NONE", warning


# ------------------------------------------------------------------------------------------------- run


def load_config(source: Path = SOURCE) -> dict[str, Any]:
    return json.loads((source / CONFIG).read_text())


def grade_submission(root: Path, config: dict[str, Any], start: float) -> dict[str, Any]:
    """Grade the submission under ``root/submission`` and return the results (never raises for the
    submission's faults: a missing, damaged or unreadable notebook is a result too)."""
    import nbformat

    from autograder.core import grade

    chapter = config["chapter"]
    release_path = SOURCE / "course" / chapter / f"{chapter}.ipynb"
    source_path = SOURCE / "solutions" / chapter / f"{chapter}.ipynb"
    release = nbformat.read(release_path, as_version=4)
    secret = hidden_lines(nbformat.read(source_path, as_version=4), release)
    lock_down(root)
    box, how, warning = choose_sandbox()
    print(how, flush=True)
    if warning:
        print(warning, flush=True)
    submission, note = find_submission(root / "submission", chapter)
    if submission is None:
        print(f"nothing graded: {note}", flush=True)
        return results_json(config, problem=note, seconds=time.monotonic() - start, warning=warning)
    print(f"grading {submission}", flush=True)
    result, _ = grade.grade(release_path, submission, source_path, student="gradescope", chapter=chapter,
                            sandbox=box, cell_timeout=float(config.get("cell_timeout", CELL_TIMEOUT)),
                            submission_timeout=float(config.get("submission_timeout", SUBMISSION_TIMEOUT)))
    notices = ([note] if note else []) + list(result.notices)
    for test in result.tests:
        first = test.message.splitlines()[0][:90] if test.message else ""
        print(f"  {test.grade_id:28} {test.score:g}/{test.points:g}  {first}")
    for exercise, reasons in result.flagged.items():
        print(f"  flagged for review: {exercise}: {'; '.join(reasons)}")
    for line in notices:
        print(f"  note: {line}")
    extra = {"sandbox": how, "seconds": round(result.seconds, 1), "kernel_peak_mb": result.kernel_peak_mb,
             "restarts": result.restarts, "timings": result.timings, "submission": submission.name}
    print(f"graded in {result.seconds:.1f} s, kernel peak {result.kernel_peak_mb:.0f} MB", flush=True)
    if result.error:
        print(f"the grader failed: {result.error}", flush=True)
        return results_json(config, problem=f"the grader failed ({result.error}); ask your instructor to grade it "
                                            "again", notices=notices, seconds=time.monotonic() - start,
                            secret=secret, warning=warning, extra=extra)
    scores = {t.grade_id: (t.score, t.message) for t in result.tests}
    return results_json(config, scores, result.flagged, notices, seconds=time.monotonic() - start, secret=secret,
                        warning=warning, extra=extra)


def write_results(root: Path, data: dict[str, Any]) -> Path:
    """``root/results/results.json``, written whole or not at all."""
    target = root / "results" / "results.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(".results.json.partial")
    partial.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(partial, target)
    return target


def run(root: Path) -> int:
    """run_autograder's work: grade, and write results.json whatever happens."""
    start = time.monotonic()
    try:
        config = load_config()
    except (OSError, ValueError) as err:  # the package is broken: the shell's fallback file says so
        print(f"the package's {CONFIG} cannot be read: {err}", flush=True)
        return 1
    try:
        data = grade_submission(root, config, start)
    except BaseException as err:  # noqa: BLE001 - whatever happened, the student gets a valid results.json
        print(f"the grader failed: {type(err).__name__}: {err}", flush=True)
        data = results_json(config, problem=f"the grader failed ({type(err).__name__}: {str(err)[:300]}); ask your "
                                            "instructor to grade it again", seconds=time.monotonic() - start)
    target = write_results(root, data)
    print(f"{data['score']:g} / {sum(t['max_score'] for t in data['tests']):g} points; written {target}", flush=True)
    return 0


def check(root: Path) -> int:
    """setup.sh's last step: modes set, the grader importable, and which sandbox grading will get."""
    from autograder.core import grade  # noqa: F401 - the grader's imports work with this interpreter

    config = load_config()
    for line in lock_down(root):
        print(f"[dlcourse setup] {line}")
    _, how, warning = choose_sandbox()
    print(f"[dlcourse setup] chapter {config['chapter']}: {len(config['tests'])} tests; grading {how}")
    if warning:
        print(f"[dlcourse setup] {warning}")
    return 0


# ----------------------------------------------------------------------------------------------- build


def _models(texts: list[str]) -> list[str]:
    low = "\n".join(texts).lower()
    return [name for name, words in MODEL_NAMES.items() if any(w in low for w in words)]


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                  and ".ipynb_checkpoints" not in p.parts and p.suffix != ".pyc")


def _render(template: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        template = template.replace(f"@{key}@", value)
    return template


def _commit() -> str:
    try:
        done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=SOURCE, capture_output=True, text=True,
                              timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def build(chapter: str, out: Path | None = None, hidden: str = DEFAULT_HIDDEN, cell_timeout: float = CELL_TIMEOUT,
          submission_timeout: float = SUBMISSION_TIMEOUT) -> Path:
    """Write ``<out>/<chapter>.zip`` (default dist/gradescope/) for Gradescope; returns its path."""
    import nbformat

    from autograder.bookkeeping import pipeline

    if hidden not in VISIBILITIES:
        raise pipeline.PipelineError(f"hidden tests' visibility {hidden!r}: choose one of {', '.join(VISIBILITIES)}")
    pipeline.chapters(chapter)  # an unknown chapter stops here with the list
    release_path = SOURCE / "course" / chapter / f"{chapter}.ipynb"
    source_path = SOURCE / "solutions" / chapter / f"{chapter}.ipynb"
    for path in (release_path, source_path):
        if not path.is_file():
            raise pipeline.PipelineError(f"{path.relative_to(SOURCE)} is missing (make release CH={chapter})")
    release = nbformat.read(release_path, as_version=4)
    models = _models([release_path.read_text(), source_path.read_text()])
    config = {"chapter": chapter, "hidden_visibility": hidden, "cell_timeout": cell_timeout,
              "submission_timeout": submission_timeout, "models": models, "commit": _commit(),
              "tests": test_entries(release, hidden)}
    fallback = results_json(config, problem="the autograder stopped before it could grade this submission (it ran "
                                            "past its time limit, or its Python failed); please tell your instructor")
    values = {"CHAPTER": chapter, "MODELS": " ".join(models),
              "PREPARE_LM": "1" if "smollm2-135m-instruct" in models else "0",
              "WALL_LIMIT": str(int(submission_timeout) + STARTUP_ALLOWANCE)}
    members: list[tuple[str, Path | bytes, int]] = [
        ("setup.sh", _render((TEMPLATES / "setup.sh").read_text(), values).encode(), 0o755),
        ("run_autograder", _render((TEMPLATES / "run_autograder").read_text(), values).encode(), 0o755),
        (CONFIG, (json.dumps(config, indent=1) + "\n").encode(), 0o644),
        (FALLBACK, (json.dumps(fallback, indent=1) + "\n").encode(), 0o644),
    ]
    items = [*TOP_FILES, "dlcourse", "data", f"course/{chapter}", f"solutions/{chapter}"]
    for item in items:
        for path in _files(SOURCE / item) if (SOURCE / item).exists() else []:
            members.append((path.relative_to(SOURCE).as_posix(), path, 0o644))
    # the grader: its three rooms' code (the references and the oracle declarations in core/ included)
    grader = [SOURCE / "autograder" / "__init__.py"] + [
        p for room in ("core", "bookkeeping", "platforms") for p in _files(SOURCE / "autograder" / room)
        if p.suffix == ".py" or p.name == "oracles.toml"]
    members += [(p.relative_to(SOURCE).as_posix(), p, 0o644) for p in grader]
    members += [(f"autograder/platforms/templates/gradescope/{p.name}", p, 0o755) for p in sorted(TEMPLATES.iterdir())]
    target = (out or SOURCE / "dist" / "gradescope") / f"{chapter}.zip"
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{chapter}-", suffix=".zip", delete=False) as tmp:
        partial = Path(tmp.name)
    try:
        with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for name, content, mode in members:
                info = zipfile.ZipInfo(name, date_time=time.localtime()[:6])
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = (stat.S_IFREG | mode) << 16
                zf.writestr(info, content if isinstance(content, bytes) else content.read_bytes())
        os.chmod(partial, 0o644)  # a temporary file is made private; the zip is not secret on this machine
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gradescope.py", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("build", help="dist/gradescope/<chapter>.zip for Gradescope's autograder")
    p.add_argument("--chapter", required=True)
    p.add_argument("--hidden", default=DEFAULT_HIDDEN, choices=VISIBILITIES,
                   help=f"when students see the hidden tests' results (default {DEFAULT_HIDDEN})")
    p.add_argument("--out", type=Path, help="folder of the zip (default dist/gradescope/)")
    p.add_argument("--cell-timeout", type=float, default=CELL_TIMEOUT, help="seconds per cell")
    p.add_argument("--submission-timeout", type=float, default=SUBMISSION_TIMEOUT, help="seconds per submission")
    default_root = Path(os.environ.get("DLCOURSE_GRADESCOPE_ROOT", "/autograder"))
    for name, what in (("run", "grade /autograder/submission into /autograder/results/results.json"),
                       ("check", "set file modes and say which sandbox grading gets (setup.sh)")):
        sub.add_parser(name, help=what).add_argument("--root", type=Path, default=default_root)
    args = parser.parse_args(argv)
    if args.command == "run":
        return run(args.root.resolve())
    if args.command == "check":
        return check(args.root.resolve())
    from autograder.bookkeeping import pipeline

    try:
        target = build(args.chapter, args.out, args.hidden, args.cell_timeout, args.submission_timeout)
    except pipeline.PipelineError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    size = target.stat().st_size / 1e6
    print(f"{target.relative_to(SOURCE) if target.is_relative_to(SOURCE) else target}: {size:.1f} MB; hidden tests "
          f"{args.hidden}; the grader's limit is {args.submission_timeout:.0f} s per submission (set Gradescope's "
          f"autograder timeout above {args.submission_timeout + STARTUP_ALLOWANCE:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
