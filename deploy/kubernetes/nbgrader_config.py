"""nbgrader in a student's server on Kubernetes (/etc/jupyter/nbgrader_config.py in the course image).

The exchange is ngshare, a JupyterHub service: every pod runs as the same uid, so a shared folder could not keep
one student's submission from another's; ngshare checks who asks through the hub. Only the student's side of
nbgrader is on in the image (the Assignments panel; no formgrader, no assignment creation): the instructor grades
with the course's own grader (`make autograde`), never with nbgrader's in-kernel autograde.
"""

from ngshare_exchange import configureExchange

c = get_config()  # noqa: F821 - nbgrader's config loader provides it
c.CourseDirectory.course_id = "dlcourse"
# the ngshare service of the namespace dlcourse (values.yaml, hub.services.ngshare.url)
configureExchange(c, "http://ngshare.dlcourse.svc.cluster.local:8080/services/ngshare")
