"""The file nbgrader reads from the folder it runs in: the pipeline and formgrader run nbgrader here, in
autograder/. What it sets is ``autograder/platforms/nbgrader_config.py``."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from autograder.platforms.nbgrader_config import configure  # noqa: E402

configure(get_config())  # noqa: F821
