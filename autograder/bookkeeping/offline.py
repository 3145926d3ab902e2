"""The JavaScript a rendered chapter (``make html``) needs, kept on this machine so the pages work offline
(and axe-core, the accessibility engine the browser tests run on the course's pages).

nbconvert's pages load three scripts from public CDNs: RequireJS, the Jupyter widgets' HTML manager (which
draws every widget from the state saved in the page) and MathJax. Offline, every widget output is blank and
the maths stays as TeX source. ``make setup`` fetches pinned versions of the three from the npm registry,
checks each archive against its pinned SHA-512 (the registry's integrity string) and unpacks only the files a
page uses into ``.venv/share/dlcourse-offline/``; :func:`install` copies them beside the rendered pages.

    python autograder/bookkeeping/offline.py fetch     # what make setup runs (nothing to do when the files are there)
    python autograder/bookkeeping/offline.py check     # exit status 1 when the files are missing or damaged
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STORE = ROOT / ".venv" / "share" / "dlcourse-offline"


@dataclass(frozen=True)
class Package:
    """One npm package: the version, the registry's integrity string for its archive, and what to keep (paths
    inside the archive's ``package/`` folder: a file, or a folder kept whole)."""

    name: str
    version: str
    integrity: str
    keep: tuple[str, ...]
    folder: str
    licence: str
    omit: tuple[str, ...] = ()

    @property
    def spec(self) -> str:
        return f"{self.name}@{self.version}"


PACKAGES = (
    Package("requirejs", "2.3.7",
            "sha512-DouTG8T1WanGok6Qjg2SXuCMzszOo0eHeH9hDZ5Y4x8Je+9JB38HdTLT4/VA8OaUhBa0JPVHJ0pyBkM1z+pDsw==",
            ("require.js", "package.json"), "requirejs", "MIT"),
    Package("@jupyter-widgets/html-manager", "1.0.15",
            "sha512-5thBIV6ymNgmPVOHvzx+gGy8ZSKmSazhtGw4/c4xJDVzRhG9PTeQsRjF3FUTopvFi//SABeNz1yp47bCrJ3CQA==",
            ("dist", "LICENSE", "package.json"), "html-manager", "BSD-3-Clause",
            omit=("dist/embed.js", "dist/libembed-amd.js", "dist/embed.js.LICENSE.txt")),
    Package("mathjax", "3.2.2",
            "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw==",
            ("es5/tex-chtml-full.js", "es5/output/chtml/fonts/woff-v2", "LICENSE", "package.json"), "mathjax",
            "Apache-2.0"),
    # not for the pages: the accessibility engine the browser tests run on them (tests/test_accessibility.py)
    Package("axe-core", "4.14.1",
            "sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ==",
            ("axe.min.js", "LICENSE", "package.json"), "axe-core", "MPL-2.0"),
)

# Where a page finds each script, relative to the folder the scripts are copied into.
REQUIRE_JS = "requirejs/require.js"
WIDGETS_JS = "html-manager/dist/embed-amd.js"
MATHJAX_JS = "mathjax/es5/tex-chtml-full.js"
AXE_JS = "axe-core/axe.min.js"
STAMP = "versions.json"


class OfflineError(RuntimeError):
    """The offline scripts cannot be fetched or are not there."""


def _integrity(path: Path) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(path.read_bytes()).digest()).decode()


def _wanted(member: str, package: Package) -> bool:
    inside = member.removeprefix("package/")
    return (member.startswith("package/") and not inside.endswith(".map") and inside not in package.omit
            and any(inside == k or inside.startswith(k + "/") for k in package.keep))


def _expected() -> dict[str, str]:
    return {p.name: p.version for p in PACKAGES}


def present(store: Path = STORE) -> bool:
    """Whether every pinned script is unpacked in ``store``."""
    try:
        versions = json.loads((store / STAMP).read_text())
    except (OSError, ValueError):
        return False
    return versions == _expected() and all((store / f).is_file()
                                           for f in (REQUIRE_JS, WIDGETS_JS, MATHJAX_JS, AXE_JS))


def fetch(store: Path = STORE, npm: str | None = None) -> bool:
    """Fetch and unpack the pinned packages into ``store`` unless they are there; True when it fetched.
    OfflineError when npm is missing, the registry cannot be reached or an archive is not the pinned one."""
    if present(store):
        return False
    npm = npm or shutil.which("npm")
    if not npm:
        raise OfflineError("npm is not installed (Debian: apt-get install npm); make html's pages need it once to "
                           "fetch their scripts")
    partial = store.with_name(store.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        for package in PACKAGES:
            done = subprocess.run([npm, "pack", package.spec, "--json", "--pack-destination", tmp],
                                  capture_output=True, text=True, timeout=300, cwd=tmp)
            if done.returncode != 0:
                raise OfflineError(f"npm pack {package.spec} failed:\n{done.stderr[-1500:]}")
            (archive,) = Path(tmp).glob(f"*{package.version}.tgz")
            got = _integrity(archive)
            if got != package.integrity:
                raise OfflineError(f"{package.spec}: the archive's SHA-512 is {got}, not the pinned "
                                   f"{package.integrity}; nothing was installed")
            with tarfile.open(archive) as tar:
                members = [m for m in tar.getmembers() if m.isfile() and _wanted(m.name, package)]
                for member in members:
                    member.name = f"{package.folder}/{member.name.removeprefix('package/')}"
                tar.extractall(partial, members=members, filter="data")
            archive.unlink()
    (partial / STAMP).write_text(json.dumps(_expected(), indent=1) + "\n")
    (partial / "SOURCES.md").write_text(
        "Fetched by `make setup` (autograder/bookkeeping/offline.py) from the npm registry, checked against "
        "pinned SHA-512s:\n\n"
        + "".join(f"- {p.spec} in {p.folder}/: {p.licence} (its package.json, and its LICENSE file where the "
                  "package has one)\n" for p in PACKAGES))
    shutil.rmtree(store, ignore_errors=True)
    partial.rename(store)
    return True


def install(folder: Path, store: Path = STORE) -> Path:
    """Copy the scripts into ``folder`` (beside the rendered pages); returns it. OfflineError when they were
    never fetched."""
    if not present(store):
        raise OfflineError(f"the scripts the pages need offline are not in {store}: run `make setup` (it fetches "
                           "them with npm), or `make html CDN=1` for pages that load them from the internet")
    if not (folder / STAMP).is_file() or (folder / STAMP).read_text() != (store / STAMP).read_text():
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(store, folder)
    return folder


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["fetch"]:
        try:
            fetched = fetch()
        except (OfflineError, OSError, subprocess.TimeoutExpired) as err:
            print(f"the offline scripts of make html were not fetched: {err}", file=sys.stderr)
            return 1
        if fetched or not os.environ.get("DLCOURSE_QUIET_SETUP"):  # other make targets: only what was done
            print(f"offline scripts for make html {'fetched into' if fetched else 'already in'} {STORE}")
        return 0
    if args == ["check"]:
        ok = present()
        print(f"offline scripts {'present' if ok else 'missing'} in {STORE}")
        return 0 if ok else 1
    print(__doc__.split("\n\n")[-1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
