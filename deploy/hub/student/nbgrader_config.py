"""nbgrader in a student's server on the course's JupyterHub (`make hub`): the exchange is a folder on this
machine (hub.py makes it; release, collect and feedback go through it) and the course is ``dlcourse``."""

import os

c = get_config()  # noqa: F821 - nbgrader's config loader provides it
c.CourseDirectory.course_id = "dlcourse"
c.Exchange.root = os.environ["DLCOURSE_EXCHANGE"]
