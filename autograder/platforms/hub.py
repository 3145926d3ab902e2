"""The course's JupyterHub on one machine (``make hub``), and the instructor's side of its exchange.

    python autograder/platforms/hub.py start [--roster R] [--root /srv/dlcourse] [--ip 127.0.0.1] [--port 8000]
    python autograder/platforms/hub.py release  --chapter CH    # the released chapter into the exchange
    python autograder/platforms/hub.py collect  --chapter CH    # submissions from the exchange into submitted/
    python autograder/platforms/hub.py feedback --chapter CH    # make feedback's HTML back through the exchange

``start`` makes, in order, and stops at the first thing that is wrong, with what to do about it:

1. a Unix account for every id of the roster and one for the instructor (the hub's admin), each with a home
   only its owner can open; a new account gets a random password, written to ``<root>/passwords.csv`` (mode
   600) for the instructor to hand out; an account that exists keeps its password;
2. the repository locked to the instructor: everything at its top but the course's environment, package,
   data, models, release and guides (``OPEN``) loses its permissions for group and others — ``solutions/``,
   ``autograder/`` with the gradebook and the submissions, ``tests/``, ``.git`` — and so does the grading
   folder; a student's account then proves it can import the course and cannot read ``solutions/``;
3. the exchange (``<root>/exchange``, nbgrader's folder exchange, with the course's folders made by the
   instructor: students may add to its inbound folder but not list it, and find feedback only by a hash of
   their own submission) and the hub's own state (mode 700);
4. JupyterHub itself (``deploy/hub/jupyterhub_config.py``) with ``configurable-http-proxy`` from npm.

Grading is the course's own grader (``make autograde``) on what ``collect`` brought in; nbgrader's in-kernel
autograde never runs (see ``one_grader.py``).
"""

from __future__ import annotations

import argparse
import csv
import os
import pwd
import re
import secrets
import shutil
import socket
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: the `autograder` package is imported from the repository
    sys.path.insert(0, str(ROOT))

from autograder.bookkeeping import pipeline, roster  # noqa: E402
from autograder.core.sandbox import STUDENT_PATHS  # noqa: E402

CONFIG = ROOT / "deploy" / "hub" / "jupyterhub_config.py"
STUDENT_SETTINGS = ROOT / "deploy" / "hub" / "student"  # nbgrader's and JupyterLab's, in students' servers
PROXY = ROOT / ".hub" / "node_modules" / ".bin" / "configurable-http-proxy"
DEFAULT_ROOT = Path("/srv/dlcourse")
# What a student's server reads in the repository; everything else at its top is the instructor's alone.
OPEN = (".venv", *STUDENT_PATHS, "README.md", "docs", "LICENSE")  # docs/: the guides the README links to
COURSE_ID = "dlcourse"  # nbgrader's course id, as in autograder/platforms/nbgrader_config.py and deploy/hub/student/
UNIX_NAME = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
FIRST_UID = 1000  # below: system accounts (login.defs' UID_MIN); a roster id that names one is refused


class HubError(RuntimeError):
    """Something the hub cannot start with; the message says what to do."""


def unavailable() -> str | None:
    """Why ``make hub`` cannot run on this machine, or None when it can."""
    if os.geteuid() != 0:
        return ("make hub creates a Unix account per student and runs each student's server as that account: "
                "run it as root (sudo make hub)")
    for tool in ("useradd", "chpasswd", "runuser"):
        if shutil.which(tool) is None:
            return f"make hub needs {tool} (Debian: the passwd and util-linux packages)"
    if not PROXY.exists():
        return f"no {PROXY.relative_to(ROOT)}: make setup installs configurable-http-proxy with npm (needs Node.js)"
    try:
        import jupyterhub  # noqa: F401
    except ImportError:
        return "jupyterhub is not installed in .venv: run make setup"
    return None


def exchange_root(root: Path) -> Path:
    return root / "exchange"


# ------------------------------------------------------------------------------------------------ accounts


def account_names(people: dict[str, dict[str, str]], instructor: str) -> list[str]:
    """The roster's ids and the instructor's name, each checked as a Unix account name."""
    names = [*people, instructor]
    bad = [n for n in names if not UNIX_NAME.match(n)]
    if bad:
        raise HubError(f"these ids cannot be Unix account names (lower-case letters, digits, _ and -, starting with "
                       f"a letter or _, at most 32 characters): {', '.join(bad)}; change them in the roster")
    return list(dict.fromkeys(names))


def ensure_accounts(names: list[str], passwords: Path) -> dict[str, str]:
    """A Unix account for each name (home mode 700); returns name -> password for the accounts made now, which
    are also added to ``passwords`` (CSV, mode 600). An existing account is used as it is, unless it is a
    system account."""
    made: dict[str, str] = {}
    for name in names:
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            entry = None
        if entry is not None:
            if entry.pw_uid < FIRST_UID:
                raise HubError(f"{name!r} is a system account (uid {entry.pw_uid}) on this machine; give that "
                               "person another id in the roster")
            continue
        _run(["useradd", "--create-home", "--shell", "/bin/bash", "--user-group", "--key", "UMASK=077",
              "--comment", "dlcourse", name])
        password = secrets.token_urlsafe(12)
        _run(["chpasswd"], stdin=f"{name}:{password}\n")
        made[name] = password
    for name in names:
        home = Path(pwd.getpwnam(name).pw_dir)
        if home.is_dir():
            home.chmod(0o700)
    if made:
        new = not passwords.exists()
        passwords.touch(mode=0o600)
        passwords.chmod(0o600)
        with passwords.open("a", newline="") as f:
            out = csv.writer(f)
            if new:
                out.writerow(["account", "password"])
            out.writerows(made.items())
    return made


def remove_accounts(names: list[str]) -> None:
    """Delete the accounts (and homes) of ``names`` that this course made (the tests' clean-up)."""
    for name in names:
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        if entry.pw_uid >= FIRST_UID and entry.pw_gecos == "dlcourse":
            subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True)
            subprocess.run(["userdel", "--remove", name], capture_output=True)


# ------------------------------------------------------------------------------------------------ the lock


def lock(repo: Path = ROOT, grading: Path | None = None) -> list[Path]:
    """Take group and other permissions off everything at the top of ``repo`` but ``OPEN`` (and off the
    grading folder); returns what was locked. The repository's own folder keeps its mode: the names in it
    are no secret, what the closed folders hold is."""
    locked = []
    for entry in sorted(repo.iterdir()):
        if entry.name not in OPEN and not entry.is_symlink():
            entry.chmod(stat.S_IMODE(entry.stat().st_mode) & 0o700)
            locked.append(entry)
    if grading is not None and grading.exists() and repo not in grading.parents:
        grading.chmod(stat.S_IMODE(grading.stat().st_mode) & 0o700)
        locked.append(grading)
    return locked


def closed_ancestors(repo: Path = ROOT) -> list[Path]:
    """The folders on the way to the repository and to the interpreter (a venv's python is a link to the Python
    it was made from, often in someone's home) that other accounts cannot enter."""
    targets = [repo, Path(sys.executable).resolve(), Path(sys.base_prefix).resolve()]
    folders = {folder for target in targets for folder in target.parents}
    folders |= {Path(sys.base_prefix).resolve(), repo}
    return sorted(f for f in folders if f.is_dir() and not f.stat().st_mode & stat.S_IXOTH)


def probe(student: str, repo: Path = ROOT) -> None:
    """As ``student``: the course imports, and solutions/ and the grading folder stay closed."""
    code = ("import importlib.util, sys, dlcourse, jupyterhub, nbgrader\n"
            "assert importlib.util.find_spec('torch'), 'torch'\n"
            "closed = []\n"
            "for p in sys.argv[1:]:\n"
            "    try:\n"
            "        __import__('os').listdir(p)\n"
            "    except PermissionError:\n"
            "        closed.append(p)\n"
            "sys.exit(0 if len(closed) == len(sys.argv) - 1 else 'readable: ' + ', '.join(sorted("
            "set(sys.argv[1:]) - set(closed))))\n")
    secret = [str(repo / "solutions"), str(repo / "autograder"), str(pipeline.GRADING)]
    done = subprocess.run(["runuser", "-u", student, "--", sys.executable, "-c", code, *secret],
                          capture_output=True, text=True, cwd="/", timeout=120)
    if done.returncode != 0:
        raise HubError(f"as {student}: {(done.stderr or done.stdout).strip()[-600:]} — the course's .venv, dlcourse/, "
                       "data/ and models/ must be readable by others (chmod -R o+rX on them), and the rest closed")


# ------------------------------------------------------------------------------------------------ the hub


def prepare_root(root: Path) -> None:
    """The hub's folder (755), its state (700: the database, cookie secret), the exchange (1777, with the course's
    folders in nbgrader's modes: inbound writable but not listable) and the students' Jupyter settings (a copy of
    deploy/hub/student/, which the lock closes with the rest of deploy/)."""
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    settings = root / "student"
    shutil.rmtree(settings, ignore_errors=True)
    shutil.copytree(STUDENT_SETTINGS, settings)
    for path in [settings, *settings.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    (root / "state").mkdir(exist_ok=True)
    (root / "state").chmod(0o700)
    # nbgrader's client refuses an exchange its user cannot write to; the sticky bit keeps anyone from renaming or
    # removing what is not theirs, and the course's own folders are made here, as nbgrader's release makes them,
    # so that no student can claim the course's name before the first release.
    exchange_root(root).mkdir(exist_ok=True)
    exchange_root(root).chmod(0o1777)
    course = exchange_root(root) / COURSE_ID
    for folder, mode in ((course, 0o755), (course / "outbound", 0o755), (course / "inbound", 0o2733),
                         (course / "feedback", 0o711)):
        folder.mkdir(exist_ok=True)
        if folder.stat().st_uid != os.geteuid():
            raise HubError(f"{folder} belongs to someone else (uid {folder.stat().st_uid}), not to the instructor: "
                           "remove it, then start the hub again")
        folder.chmod(mode)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def hub_command(root: Path, people: dict[str, dict[str, str]], instructor: str, ip: str, port: int,
                tls: tuple[Path, Path] | None = None) -> tuple[list[str], dict[str, str]]:
    """The command that starts JupyterHub, and its environment (what deploy/hub/jupyterhub_config.py reads)."""
    scheme = "https" if tls else "http"
    env = dict(os.environ, DLCOURSE_HUB_ROOT=str(root), DLCOURSE_HUB_URL=f"{scheme}://{ip}:{port}",
               DLCOURSE_HUB_API_PORT=str(_free_port()), DLCOURSE_PROXY_API_PORT=str(_free_port()),
               DLCOURSE_HUB_USERS=",".join([*people, instructor]), DLCOURSE_HUB_ADMIN=instructor,
               PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    if tls:
        env.update(DLCOURSE_HUB_SSL_CERT=str(tls[0]), DLCOURSE_HUB_SSL_KEY=str(tls[1]))
    return [str(Path(sys.executable).parent / "jupyterhub"), "-f", str(CONFIG)], env


def start(roster_file: Path, root: Path, instructor: str, ip: str, port: int,
          tls: tuple[Path, Path] | None = None) -> int:
    if not roster_file.is_file():  # a mistyped ROSTER= is not "no students"
        raise HubError(f"no roster at {roster_file}: name the class's roster.csv with ROSTER= (the hub makes an "
                       "account for each of its ids; see autograder/roster.example.csv)")
    why = unavailable()
    if why:
        raise HubError(why)
    if tls and not all(p.is_file() for p in tls):
        raise HubError(f"no certificate or key at {tls[0]} / {tls[1]}")
    try:
        people = roster.read(roster_file)
    except roster.RosterError as err:
        raise HubError(str(err)) from err
    if not people:
        raise HubError(f"no students in {roster_file}: the hub makes an account for each id of the roster "
                       f"(see autograder/roster.example.csv)")
    names = account_names(people, instructor)
    closed = closed_ancestors(ROOT)
    if closed:
        raise HubError(f"other accounts cannot enter {', '.join(map(str, closed))}, on the way to the course's .venv "
                       f"or the Python it was made from ({Path(sys.executable).resolve()}): students' servers run "
                       f"them. Open the way (chmod o+x {' '.join(map(str, closed))}: entering, not listing) or "
                       "make .venv from a Python installed for every account (PYTHON=/usr/bin/python3.11 make setup)")
    prepare_root(root)
    made = ensure_accounts(names, root / "passwords.csv")
    lock(ROOT, pipeline.GRADING)
    probe(names[0])
    print(f"accounts: {len(names)} ({len(made)} new; their passwords are in {root / 'passwords.csv'})")
    print(f"exchange: {exchange_root(root)}; the repository is closed to students but for {', '.join(OPEN)}")
    if ip not in ("127.0.0.1", "localhost", "::1") and not tls:
        print("WARNING: serving the network over plain HTTP: passwords cross it readable; give SSL_CERT= and "
              "SSL_KEY= (a certificate for this machine's name) or put the hub behind an HTTPS proxy")
    print(f"JupyterHub on {'https' if tls else 'http'}://{ip}:{port} (admin: {instructor}); Ctrl-C stops it")
    cmd, env = hub_command(root, people, instructor, ip, port, tls)
    os.chdir(root / "state")
    os.execve(cmd[0], cmd, env)
    return 0  # not reached


def exchange(step: str, chapter: str, root: Path) -> str:
    """The instructor's side of the exchange for ``chapter``: release, collect or feedback."""
    if chapter not in pipeline.chapters():
        raise HubError(f"no chapter {chapter!r} (one of: {', '.join(pipeline.chapters())})")
    if not exchange_root(root).is_dir():
        raise HubError(f"no exchange at {exchange_root(root)}: start the hub (make hub) first")
    os.environ["DLCOURSE_EXCHANGE"] = str(exchange_root(root))
    if step == "release":
        done = pipeline.nbgrader("release_assignment", chapter, "--force")
    elif step == "collect":
        done = pipeline.nbgrader("collect", chapter, "--update")
    else:
        pipeline.feedback()
        done = pipeline.nbgrader("release_feedback", chapter)
    return "\n".join(line for line in (done.stdout + done.stderr).splitlines()
                     if line.startswith("[") and ("INFO]" in line or "WARNING]" in line))


def _run(cmd: list[str], stdin: str | None = None) -> None:
    done = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    if done.returncode != 0:
        raise HubError(f"`{cmd[0]}` failed: {(done.stderr or done.stdout).strip()[:300]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hub.py", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("start", help="accounts from the roster, the lock, the exchange, then JupyterHub")
    p.add_argument("--roster", type=Path, default=pipeline.ROSTER)
    p.add_argument("--instructor", default=os.environ.get("INSTRUCTOR") or "instructor")
    p.add_argument("--ip", default="127.0.0.1", help="where the hub listens (default: this machine only)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--ssl-cert", type=Path, help="a certificate for HTTPS (with --ssl-key)")
    p.add_argument("--ssl-key", type=Path)
    for step in ("release", "collect", "feedback"):
        p = sub.add_parser(step)
        p.add_argument("--chapter", required=True)
    for p in sub.choices.values():
        p.add_argument("--root", type=Path, default=Path(os.environ.get("HUB_ROOT") or DEFAULT_ROOT),
                       help="the hub's folder: exchange, state, passwords (default /srv/dlcourse)")
    args = parser.parse_args(argv)
    try:
        if args.command == "start":
            if bool(args.ssl_cert) != bool(args.ssl_key):
                raise HubError("HTTPS needs both a certificate and its key (SSL_CERT= and SSL_KEY=)")
            tls = (args.ssl_cert.resolve(), args.ssl_key.resolve()) if args.ssl_cert else None
            return start(args.roster, args.root.resolve(), args.instructor, args.ip, args.port, tls)
        print(exchange(args.command, args.chapter, args.root.resolve()))
    except (HubError, pipeline.PipelineError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
