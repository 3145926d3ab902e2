"""``python -m dlcourse``: the student's commands (:mod:`dlcourse.student`)."""

import sys

from dlcourse.student import main

sys.exit(main())
