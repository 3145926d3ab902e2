"""Reference implementations the hidden tests compare with, kept in ``autograder/core/references/``.

They live beside the grader, not in the course package, so the student bundle never contains them. A
hidden test loads one by name; it runs in the grader, or in the instructor's kernel when a solution
notebook is run top to bottom.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from dlcourse.assets import REPO_ROOT

REFERENCES = REPO_ROOT / "autograder" / "core" / "references"


def load(name: str) -> ModuleType:
    """The module ``autograder/core/references/<name>.py`` (loaded once per process)."""
    key = f"dlcourse_reference_{name}"
    if key in sys.modules:
        return sys.modules[key]
    path = REFERENCES / f"{name}.py"
    if not name.isidentifier() or not path.is_file():
        raise FileNotFoundError(f"no reference implementation {name!r} in {REFERENCES} (the instructor's "
                                "repository has them; the student bundle does not)")
    spec = importlib.util.spec_from_file_location(key, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[key]  # a broken reference is not kept half-loaded
        raise
    return module
