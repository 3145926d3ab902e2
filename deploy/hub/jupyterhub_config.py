"""JupyterHub for the course on one machine (`make hub`; autograder/platforms/hub.py starts it with this file).

Everything the hub needs comes from environment variables that hub.py sets:

* ``DLCOURSE_HUB_ROOT``: the hub's folder (its database, cookie secret, the exchange, the passwords file, the
  students' Jupyter settings);
* ``DLCOURSE_HUB_URL``: where the hub listens (loopback unless the instructor says otherwise), and
  ``DLCOURSE_HUB_API_PORT`` / ``DLCOURSE_PROXY_API_PORT``: the hub's and the proxy's own ports, on loopback;
* ``DLCOURSE_HUB_USERS`` (the roster's ids, comma-separated) and ``DLCOURSE_HUB_ADMIN`` (the instructor);
* ``DLCOURSE_HUB_SSL_CERT`` and ``DLCOURSE_HUB_SSL_KEY``: a certificate and key for HTTPS, when given.

People log in with their Unix account (PAM): hub.py creates one per roster entry. Each person's JupyterLab runs
as that account, from the repository's ``.venv`` (the course kernel, the package, data and models, all
read-only to them), with only the students' side of nbgrader: the Assignments panel on the exchange folder.
"""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
VENV = Path(sys.prefix)
HUB_ROOT = Path(os.environ["DLCOURSE_HUB_ROOT"])
STATE = HUB_ROOT / "state"

c = get_config()  # noqa: F821 - JupyterHub's config loader provides it

c.JupyterHub.bind_url = os.environ.get("DLCOURSE_HUB_URL", "http://127.0.0.1:8000")
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{os.environ.get('DLCOURSE_HUB_API_PORT', '8081')}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{os.environ.get('DLCOURSE_PROXY_API_PORT', '8001')}"
c.ConfigurableHTTPProxy.command = [str(REPO / ".hub" / "node_modules" / ".bin" / "configurable-http-proxy")]
c.ConfigurableHTTPProxy.pid_file = str(STATE / "jupyterhub-proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(STATE / "jupyterhub.pid")
c.JupyterHub.log_datefmt = "%Y-%m-%d %H:%M:%S"
if os.environ.get("DLCOURSE_HUB_SSL_CERT"):  # HTTPS: passwords cross the network only encrypted
    c.JupyterHub.ssl_cert = os.environ["DLCOURSE_HUB_SSL_CERT"]
    c.JupyterHub.ssl_key = os.environ["DLCOURSE_HUB_SSL_KEY"]

# Who may log in: the roster's students and the instructor (an admin of the hub: the admin page lists every
# server and can stop one). PAM checks the Unix password that hub.py set and wrote to the passwords file.
c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.open_sessions = False  # no login sessions (utmp, systemd-logind) for a notebook server
c.Authenticator.allowed_users = {u for u in os.environ.get("DLCOURSE_HUB_USERS", "").split(",") if u}
c.Authenticator.admin_users = {os.environ.get("DLCOURSE_HUB_ADMIN", "instructor")}
c.JupyterHub.admin_access = False  # the admin cannot open a student's server (and read their work) by URL

# Each person's server: JupyterLab from the course's .venv, in their home (mode 700), run as their account.
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [str(VENV / "bin" / "jupyterhub-singleuser")]
c.Spawner.notebook_dir = "~"
c.Spawner.default_url = "/lab"
c.Spawner.http_timeout = 120
c.Spawner.start_timeout = 120
c.Spawner.environment = {
    # the students' nbgrader settings (the exchange, the course id) and their JupyterLab: no formgrader, no
    # assignment creation, no course list
    "JUPYTER_CONFIG_PATH": str(HUB_ROOT / "student"),  # hub.py's copy of deploy/hub/student/
    "DLCOURSE_EXCHANGE": str(HUB_ROOT / "exchange"),
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "PATH": f"{VENV / 'bin'}:/usr/local/bin:/usr/bin:/bin",
}
c.Spawner.env_keep = ["LANG", "LC_ALL", "TZ"]  # not the instructor's PYTHONPATH or DLCOURSE_* grading settings


def _stop_once() -> None:
    """One shutdown, however many signals ask for it. Stopping ``make hub`` can deliver the signal twice (Ctrl-C
    reaches make and the hub; make passes a SIGTERM on to the hub): JupyterHub then runs two clean-ups at once,
    each stopping every server, and prints "Failed to stop user: ''" and a pending-task warning for the second.
    Here the second request only says that the first is under way."""
    from jupyterhub.app import JupyterHub

    first = JupyterHub.shutdown_cancel_tasks
    if getattr(first, "once", False):
        return

    async def shutdown_cancel_tasks(self, sig=None):
        if getattr(self, "_dlcourse_stopping", False):
            self.log.info("already shutting down (%s ignored)", sig.name if sig is not None else "request")
            return
        self._dlcourse_stopping = True
        await first(self, sig)

    shutdown_cancel_tasks.once = True
    JupyterHub.shutdown_cancel_tasks = shutdown_cancel_tasks


_stop_once()
