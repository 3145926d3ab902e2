"""Drive the course's notebooks in a real browser: JupyterLab on a localhost port, Debian's Chromium through
the ``playwright`` package (no browser download), the student-facing notebook with answers filled in.

:class:`Lab` serves a folder; :class:`NotebookPage` opens a notebook, runs every cell and waits for each cell's
own execution state (not the status bar), then finds every interactive widget, changes each of its controls
and times how long the new picture takes to appear (:meth:`NotebookPage.change`). The browser tests
(``tests/test_browser.py``) and the latency benchmark (``bench/browser.py``) are both built on it.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kernel import reference_answers, released_notebook

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"


def chromium() -> str | None:
    """Path of the system Chromium (Debian's ``chromium`` package), or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def unavailable() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (make setup installs it from requirements.txt)"
    if chromium() is None:
        return ("no Chromium on this machine: `make setup` installs Debian's chromium when run as root with apt; "
                "elsewhere install it (apt-get install chromium) and run the tests again")
    return None


def filled_notebook(chapter: str, folder: Path, answers: dict[str, str] | None = None) -> Path:
    """The released notebook of ``chapter`` with every answer cell holding the reference answer (or
    ``answers``), written under ``folder/chapter/`` beside a copy of the chapter's released files."""
    import nbformat

    source = ROOT / "course" / chapter
    target = folder / chapter
    shutil.copytree(source, target, dirs_exist_ok=True)
    nb = released_notebook(chapter, reference_answers(chapter) if answers is None else answers)
    (release,) = sorted(source.glob("*.ipynb"))
    path = target / release.name
    nbformat.write(nb, path)
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_server(url: str, process: subprocess.Popen, log: Path, what: str, seconds: float = 90) -> None:
    """Poll ``url`` until the server answers; RuntimeError with the tail of its log if it exits or stays silent."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            urllib.request.urlopen(url, timeout=10)
            return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start; its log:\n{log.read_text()[-3000:]}") from None
            time.sleep(0.3)


class Lab:
    """JupyterLab serving ``root`` on a free localhost port with a random token; a context manager.

    Every cell of a notebook stays in the page (``windowingMode: none``), so widgets below the fold render too;
    ``window.jupyterapp`` is exposed so tests can read each cell's model. ``env`` adds to the kernel's
    environment (the kernel inherits the server's)."""

    def __init__(self, root: Path, env: dict[str, str] | None = None, log: Path | None = None) -> None:
        self.root = Path(root)
        self.port = _free_port()
        self.token = secrets.token_hex(16)
        self._ending: dict[str, threading.Thread] = {}  # notebook → the thread shutting its kernel down
        state = self.root.parent / f".lab-state-{self.port}"
        settings = state / "settings" / "@jupyterlab" / "notebook-extension"
        settings.mkdir(parents=True, exist_ok=True)
        (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
        self.log_path = log or state / "lab.log"
        self._log = open(self.log_path, "w")  # noqa: SIM115 (closed in close())
        server_env = dict(os.environ, **(env or {}))
        server_env["PATH"] = f"{BIN}:{server_env.get('PATH', '')}"
        self.process = subprocess.Popen(
            [str(BIN / "jupyter"), "lab", "--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={self.port}",
             f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}",
             "--LabApp.expose_app_in_browser=True", f"--LabApp.user_settings_dir={state / 'settings'}",
             f"--LabApp.workspaces_dir={state / 'workspaces'}",
             # Kernels talk to the server over Unix sockets: a TCP port chosen at random can be taken by another
             # process before the kernel binds it, and the server's restarts reuse the same taken ports.
             "--KernelManager.transport=ipc"],
            env=server_env, stdout=self._log, stderr=subprocess.STDOUT, cwd=self.root)
        try:
            wait_for_server(f"{self.base}/api/status?token={self.token}", self.process, self.log_path, "JupyterLab")
        except RuntimeError:
            self.close()
            raise

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, relative: str) -> str:
        """The Lab page that opens ``relative`` (a path under ``root``), with a fresh workspace."""
        return f"{self.base}/lab/tree/{relative}?reset&token={self.token}"

    def _api(self, path: str, method: str = "GET"):
        """The server's REST API: the decoded JSON reply (None when there is none)."""
        request = urllib.request.Request(f"{self.base}/api/{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=30) as reply:
            data = reply.read()
        return json.loads(data) if data else None

    def wait_shut_down(self, relative: str) -> None:
        """Wait until a shutdown :meth:`shut_down_kernels` left running on ``relative`` has ended (a page opened on
        the notebook before that would connect to the kernel being shut down)."""
        ending = self._ending.pop(relative, None)
        if ending is not None:
            ending.join(60)

    def shut_down_kernels(self, relative: str, wait: bool = True) -> None:
        """Shut down the kernel of every session open on ``relative`` (through the server's REST API: a page
        whose renderer crashed cannot ask for it), so the notebook opens next time with a new kernel. With
        ``wait=False`` the shutdown goes on in a thread of its own while the caller moves on."""
        if not wait:
            self._ending[relative] = threading.Thread(target=self.shut_down_kernels, args=(relative,), daemon=True)
            self._ending[relative].start()
            return
        for session in self._api("sessions"):
            if session.get("path") == relative:
                try:
                    self._api(f"sessions/{session['id']}", "DELETE")
                except urllib.error.HTTPError as err:
                    if err.code != 404:  # 404: shut down meanwhile, by the page or another call
                        raise

    def close(self) -> None:
        for relative in list(self._ending):  # shutdowns still under way end first, with the server still there
            self.wait_shut_down(relative)
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# Page-side helpers, installed once per page. A "view" is a widget with controls above an output area (the
# course's InteractiveView, and any composite built the same way): the output is `.widget-output`, the controls
# are the view's other inputs.
_PAGE_JS = r"""
() => {
  const D = window.__dlcourse = {};
  D.notebook = () => window.jupyterapp.shell.currentWidget;
  D.codeCells = () => D.notebook().content.widgets.filter(c => c.model.type === 'code');
  D.cellStates = () => D.codeCells().map((c, i) => ({
    index: i, state: c.model.executionState, count: c.model.executionCount,
    errors: c.model.outputs.toJSON().filter(o => o.output_type === 'error')
             .map(o => o.ename + ': ' + o.evalue),
    source: c.model.sharedModel.getSource().slice(0, 80)}));
  D.streams = () => D.codeCells().map(c => [c.model.sharedModel.getSource(),
    c.model.outputs.toJSON().filter(o => o.output_type === 'stream')
      .map(o => [o.name, Array.isArray(o.text) ? o.text.join('') : o.text])]);
  D.views = () => Array.from(new Set(
      Array.from(document.querySelectorAll('.jp-Notebook .jp-Cell .widget-output'))
        .filter(out => !out.parentElement.closest('.widget-output'))
        .map(out => out.parentElement)))
    .filter(view => D.controls(view).length > 0);
  D.outputs = view => Array.from(view.querySelectorAll(':scope > .widget-output'));
  D.controls = view => Array.from(view.querySelectorAll(
        '.noUi-handle, select, .widget-toggle-button, input[type=text], input[type=number], textarea, ' +
        'input[type=checkbox]'))
      .filter(el => !D.outputs(view).some(out => out.contains(el)))
      .filter(el => !el.disabled && !el.closest('[disabled], .mod-disabled'));  // greyed out: nothing to try
  D.onDemand = el => !!el.closest('.dlcourse-on-demand');
  D.kernelIdle = () => D.notebook().sessionContext.session.kernel.status === 'idle';
  D.describe = view => {
    const cell = view.closest('.jp-Cell');
    const cells = Array.from(document.querySelectorAll('.jp-Notebook .jp-Cell'));
    const title = view.querySelector(':scope > .widget-html b');
    return {cell: cells.indexOf(cell), title: title ? title.textContent.trim() : '',
            controls: D.controls(view).map(D.label)};
  };
  D.label = el => {
    if (el.classList.contains('widget-toggle-button')) {
      const group = el.closest('.widget-toggle-buttons');
      const label = group && group.querySelector('.widget-label');
      return (label ? label.textContent.trim() + ': ' : '') + el.textContent.trim();
    }
    const box = el.closest('.widget-inline-hbox, .widget-toggle-buttons, .widget-checkbox');
    const label = box && box.querySelector('.widget-label, .widget-label-basic');
    const name = label && label.textContent.trim();
    return (name || el.getAttribute('aria-label') || el.tagName.toLowerCase());
  };
  // what the view shows: its output areas' markup (images, bar heights and text included)
  // (inside the output area: a clear_output(wait=True) sets and resets the area's own height meanwhile)
  D.snapshot = view => D.outputs(view).map(out => (out.querySelector('.jp-OutputArea') || out).innerHTML)
    .join('||');
  D.shown = view => D.outputs(view).map(out => out.textContent).join('\n');
  D.blank = view => D.outputs(view).every(out => out.textContent.trim() === '' && !out.querySelector('img'));
  D.arm = (viewIndex) => {
    const view = D.views()[viewIndex];
    const before = D.snapshot(view);
    const s = D.state = {armed: performance.now(), t0: null, t1: null, changed: false, text: ''};
    const mark = () => { if (s.t0 === null) s.t0 = performance.now(); };
    const inputs = ['keydown', 'pointerdown', 'input', 'change', 'focusout'];
    for (const type of inputs) view.addEventListener(type, mark, {capture: true});
    // A change counts once the outputs differ from before, are not blank, and stay so for a frame (a redraw
    // replaces the old output with the new one in steps; a redraw of the same picture is no change).
    const observer = new MutationObserver(() => {
      const now = D.snapshot(view);
      if (s.changed || now === before || D.blank(view)) return;
      requestAnimationFrame(() => {
        if (s.changed || D.snapshot(view) !== now) return;
        s.changed = true;
        observer.disconnect();
        for (const type of inputs) view.removeEventListener(type, mark, {capture: true});
        const images = D.outputs(view).flatMap(out => Array.from(out.querySelectorAll('img')));
        Promise.all(images.map(i => i.decode().catch(() => null))).then(() =>
          requestAnimationFrame(() => { s.t1 = performance.now(); s.text = D.shown(view); }));
      });
    });
    for (const out of D.outputs(view))
      observer.observe(out, {subtree: true, childList: true, attributes: true, characterData: true});
  };
}
"""


@dataclass
class Change:
    """One control changed: which, how long until the new picture was on screen (ms), what the output said."""

    view: int
    title: str
    control: str
    latency_ms: float | None
    output_text: str = ""

    @property
    def responded(self) -> bool:
        return self.latency_ms is not None


@dataclass
class RunReport:
    seconds: float
    cells: list[dict] = field(default_factory=list)

    @property
    def errors(self) -> list[str]:
        return [f"cell {c['index']} ({c['source']!r}): {e}" for c in self.cells for e in c["errors"]]

    @property
    def not_run(self) -> list[str]:
        return [f"cell {c['index']} ({c['source']!r})" for c in self.cells if c["count"] is None]


class NotebookPage:
    """A notebook open in JupyterLab in a Chromium page."""

    def __init__(self, browser, lab: Lab, relative: str, viewport=(1400, 1000)) -> None:
        self.lab, self.relative = lab, relative
        lab.wait_shut_down(relative)
        self.page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
        self.page.goto(lab.url(relative))
        self.page.wait_for_function(
            """() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
                       const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
                       return k && k.status === 'idle' && w.content.widgets.length > 0; }""", timeout=180_000)
        self.page.evaluate(_PAGE_JS)

    def run_all(self, timeout_s: float = 600) -> RunReport:
        """Run every cell and wait until each code cell is idle and has run (or a cell failed and stopped the
        rest)."""
        start = time.monotonic()
        self.page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
        self.page.wait_for_function(self.ALL_RAN_JS, timeout=timeout_s * 1000, polling=250)
        return RunReport(time.monotonic() - start, self.page.evaluate("window.__dlcourse.cellStates()"))

    def streams(self) -> list[tuple[str, list[tuple[str, str]]]]:
        """Each code cell's source and what it printed, as (stream name, text) pairs."""
        cells = self.page.evaluate("window.__dlcourse.streams()")
        return [(source, [tuple(out) for out in outs]) for source, outs in cells]

    ALL_RAN_JS = """() => { const cells = window.__dlcourse.cellStates();
        return cells.every(c => c.state === 'idle') &&
               (cells.every(c => c.count !== null) || cells.some(c => c.errors.length > 0)); }"""

    def all_ran(self) -> bool:
        """Whether every code cell is idle and has run (or a cell failed and stopped the rest)."""
        return self.page.evaluate(self.ALL_RAN_JS)

    WIDGET_ERRORS_JS = """() => Array.from(document.querySelectorAll(
        '.jp-Notebook .jupyter-widgets-error-widget, .jp-Notebook .jp-OutputArea-output'))
      .filter(e => e.classList.contains('jupyter-widgets-error-widget') ||
                   e.textContent.includes('Error displaying widget'))
      .map(e => e.textContent.trim().slice(0, 300))"""

    def widget_errors(self, wait_s: float = 0) -> list[str]:
        """Every widget that failed to render on the page ("Error displaying widget", or ipywidgets' error
        view: a model or view class that could not be loaded), waiting up to ``wait_s`` for one."""
        if wait_s:
            try:
                self.page.wait_for_function(f"({self.WIDGET_ERRORS_JS})().length > 0", timeout=wait_s * 1000)
            except Exception:  # none appeared
                pass
        return self.page.evaluate(self.WIDGET_ERRORS_JS)

    def views(self) -> list[dict]:
        """Every view (controls above an output area): its cell, title and control labels."""
        return self.page.evaluate("window.__dlcourse.views().map(window.__dlcourse.describe)")

    def _control(self, view: int, control: int):
        return self.page.evaluate_handle(
            f"window.__dlcourse.controls(window.__dlcourse.views()[{view}])[{control}]").as_element()

    def screenshot(self, view: int, path: Path) -> None:
        handle = self.page.evaluate_handle(f"window.__dlcourse.views()[{view}]").as_element()
        handle.scroll_into_view_if_needed()
        path.parent.mkdir(parents=True, exist_ok=True)
        handle.screenshot(path=str(path))

    def change(self, view: int, control: int, timeout_s: float = 60) -> Change:
        """Change one control of one view the way a person would, and time input → new picture on screen.

        How a control is moved, and moved back on the next call, is :meth:`_act`'s. A control that acts only
        when the view's run button is pressed (``dlcourse-on-demand``) is changed first, and the time is taken
        from the press of that button."""
        self.settle()
        info = self.page.evaluate(f"window.__dlcourse.describe(window.__dlcourse.views()[{view}])")
        name = info["controls"][control]
        el = self._control(view, control)
        el.scroll_into_view_if_needed()
        if el.evaluate("window.__dlcourse.onDemand"):
            if not self._act(el, lambda: None):
                return Change(view, info["title"], name, None, "nothing to change")
            self.page.wait_for_timeout(300)  # the new value reaches the kernel
            button = self.page.evaluate_handle(
                f"window.__dlcourse.views()[{view}].querySelector('.dlcourse-run button, button.dlcourse-run')"
            ).as_element()
            if button is None:
                return Change(view, info["title"], name, None, "an on-demand control without a run button")
            self._arm(view)
            button.click()
        elif not self._act(el, lambda: self._arm(view)):
            return Change(view, info["title"], name, None, "nothing to change")
        try:
            self.page.wait_for_function("window.__dlcourse.state.t1 !== null", timeout=timeout_s * 1000,
                                        polling="raf")
        except Exception:  # no new picture within the timeout: the widget did not respond
            return Change(view, info["title"], name, None, "")
        state = self.page.evaluate("window.__dlcourse.state")
        if state["t0"] is None:  # no input event reached the view (a synthetic one): time from the arming
            return Change(view, info["title"], name, state["t1"] - state["armed"], state["text"] + " [from arming]")
        return Change(view, info["title"], name, state["t1"] - state["t0"], state["text"])

    def is_on_demand(self, view: int, control: int) -> bool:
        """Whether the control acts only when its view's run button is pressed."""
        return self._control(view, control).evaluate("window.__dlcourse.onDemand")

    def settle(self, quiet_ms: int = 150) -> None:
        """Wait until the kernel is idle, and idle again ``quiet_ms`` later (a redraw a control started has
        reached the page), so the next change is timed alone."""
        self.page.wait_for_function("window.__dlcourse.kernelIdle()", timeout=120_000, polling=50)
        self.page.wait_for_timeout(quiet_ms)
        self.page.wait_for_function("window.__dlcourse.kernelIdle()", timeout=120_000, polling=50)

    def exercise(self, shots: Path | None = None, timeout_s: float = 60) -> list[Change]:
        """Change every enabled control of every view and then change it back (screenshots of each view before
        and after under ``shots``); the list of changes, in order. Each control is tried from the state the
        notebook left, so a control is never judged under settings an earlier change made (a top-k of 1 makes
        top-p do nothing)."""
        changes = []
        for i, view in enumerate(self.views()):
            if shots is not None:
                self.screenshot(i, shots / f"view{i:02d}-before.png")
            for j in range(len(view["controls"])):
                changes += [self.change(i, j, timeout_s), self.change(i, j, timeout_s)]
            if shots is not None:
                self.screenshot(i, shots / f"view{i:02d}-after.png")
        return changes

    def _act(self, el, arm) -> bool:
        """Change the control ``el``, calling ``arm`` just before the input that commits the change; False when
        it has nothing to change to. Changes alternate: the first moves the control (a slider one step, a
        dropdown to another option, a toggle to another button, a number up, a text box one character
        shorter), the next moves it back (the element remembers how, in ``data-dlcourse-back``)."""
        kind, typ, cls = el.evaluate(
            "e => e.tagName.toLowerCase() + ':' + (e.type || '') + ':' + e.className").split(":", 2)
        back = el.evaluate("e => { const b = e.dataset.dlcourseBack; delete e.dataset.dlcourseBack; return b || ''; }")

        def remember(how: str) -> None:
            el.evaluate("(e, how) => { e.dataset.dlcourseBack = how; }", how)

        if "noUi-handle" in cls or (kind == "input" and typ == "number"):
            slider = "noUi-handle" in cls
            if back:
                key = back
            elif slider and el.evaluate("e => Number(e.getAttribute('aria-valuenow')) >= "
                                        "Number(e.getAttribute('aria-valuemax'))"):
                key = "ArrowLeft"
            else:
                key = "ArrowRight" if slider else "ArrowUp"
            if not back:
                remember({"ArrowLeft": "ArrowRight", "ArrowRight": "ArrowLeft", "ArrowUp": "ArrowDown"}[key])
            el.focus()
            arm()
            el.press(key)
            if not slider:
                el.press("Tab")  # a number box commits when it is left
        elif kind == "select":
            current = el.evaluate("e => e.value")
            target = back or next(
                (o for o in el.evaluate("e => Array.from(e.options).map(o => o.value)") if o != current), None)
            if target is None:
                return False
            if not back:
                remember(current)
            arm()
            el.select_option(target)
        elif "widget-toggle-button" in cls:  # Space: JupyterLab takes Enter to edit the cell
            buttons = el.evaluate_handle("e => Array.from(e.parentElement.querySelectorAll('.widget-toggle-button'))")
            active = el.evaluate("e => Array.from(e.parentElement.querySelectorAll('.widget-toggle-button'))"
                                 ".findIndex(b => b.classList.contains('mod-active'))")
            count = el.evaluate("e => e.parentElement.querySelectorAll('.widget-toggle-button').length")
            if count < 2:
                return False
            target = int(back) if back else (active + 1) % count
            if not back:
                remember(str(active))
            arm()
            buttons.evaluate("(bs, i) => bs[i].click()", target)
        elif kind == "input" and typ == "checkbox":
            if not back:
                remember("click")
            arm()
            el.click()
        else:  # a text box or text area: one character fewer, then that character back; then leave the box
            value = el.input_value()
            on_leave = el.evaluate("e => !!e.closest('.dlcourse-on-leave')")
            if not on_leave:
                arm()  # a box with continuous updates redraws as it is typed in: time it from the edit
            if back:
                el.fill(value + back)
            elif len(value) > 1:
                remember(value[-1])
                el.fill(value[:-1])
            else:
                el.fill(value + "a")
            if on_leave:
                arm()  # the text goes to the kernel when the box is left: time it from there
            el.press("Tab")
        return True

    # whether focus shows: the focused element's outline, shadow, border or background differ from its look
    # when the focus is elsewhere (a focus a sighted keyboard user can see)
    FOCUS_SHOWN_JS = """el => {
        const look = () => { const s = getComputedStyle(el);
          return [s.outlineStyle, s.outlineWidth, s.outlineColor, s.boxShadow, s.borderColor, s.backgroundColor]
            .join('|'); };
        const focused = look(), view = el.closest('.jp-OutputArea-output') || document.body;
        const keep = view.tabIndex; view.tabIndex = -1; view.focus();
        const unfocused = look();
        view.tabIndex = keep; el.focus({focusVisible: true});
        return focused !== unfocused; }"""

    def by_keyboard(self, view: int, timeout_s: float = 60, presses: int = 40) -> Change:
        """Reach a control of ``view`` with Tab alone (from just before the view), change it with the keyboard —
        an arrow for a slider or a number, Space, an arrow and Enter for a list, Space for a check box or a
        toggle button, typing (and Tab to leave) for a text box — and time the new picture; a control that waits
        for its run button is followed by Tab to the button and Space. (In JupyterLab's command mode the arrows
        of a closed list and Enter on a button belong to the notebook.) ``output_text`` starts with ``focus
        shown`` or ``focus NOT shown`` (whether the focused control looks different from when it is not); a
        control that cannot be reached gives ``latency_ms`` None."""
        self.settle()
        info = self.page.evaluate(f"window.__dlcourse.describe(window.__dlcourse.views()[{view}])")
        self.page.evaluate(f"() => {{ const v = window.__dlcourse.views()[{view}]; v.tabIndex = -1; v.focus(); }}")
        el = None
        for _ in range(presses):
            self.page.keyboard.press("Tab")
            el = self.page.evaluate_handle(
                f"() => {{ const D = window.__dlcourse, a = document.activeElement;"
                f"  return D.controls(D.views()[{view}]).includes(a) ? a : null; }}").as_element()
            if el is not None:
                break
        if el is None:
            return Change(view, info["title"], "no control reached by Tab", None, "")
        name = el.evaluate("window.__dlcourse.label")
        shown = "focus shown" if el.evaluate(self.FOCUS_SHOWN_JS) else "focus NOT shown"
        kind, typ, cls = el.evaluate(
            "e => e.tagName.toLowerCase() + ':' + (e.type || '') + ':' + e.className").split(":", 2)
        on_demand = el.evaluate("window.__dlcourse.onDemand")
        arm = (lambda: None) if on_demand else (lambda: self._arm(view))
        if "noUi-handle" in cls:
            at_max = el.evaluate("e => Number(e.getAttribute('aria-valuenow')) >= "
                                 "Number(e.getAttribute('aria-valuemax'))")
            arm()
            self.page.keyboard.press("ArrowLeft" if at_max else "ArrowRight")
        elif kind == "select":  # Space opens the list (JupyterLab takes the arrows of a closed one), Enter picks
            last = el.evaluate("e => e.selectedIndex === e.options.length - 1")
            self.page.keyboard.press("Space")
            self.page.keyboard.press("ArrowUp" if last else "ArrowDown")
            arm()
            self.page.keyboard.press("Enter")
        elif "widget-toggle-button" in cls:  # Space: JupyterLab takes Enter to edit the cell
            if "mod-active" in cls:  # the chosen one: on to the next button of the group (the one before, at its end)
                last = el.evaluate("e => !e.nextElementSibling")
                self.page.keyboard.press("Shift+Tab" if last else "Tab")
                name = self.page.evaluate("window.__dlcourse.label(document.activeElement)")
            arm()
            self.page.keyboard.press("Space")
        elif kind == "input" and typ == "checkbox":
            arm()
            self.page.keyboard.press("Space")
        elif kind == "input" and typ == "number":
            arm()
            self.page.keyboard.press("ArrowUp")
            self.page.keyboard.press("Tab")
        else:  # a text box: one more character, sent (where it waits to be left) by leaving it
            arm()
            self.page.keyboard.press("End")
            self.page.keyboard.type("s")
            self.page.keyboard.press("Tab")
        if on_demand:
            for _ in range(presses):
                self.page.keyboard.press("Tab")
                if self.page.evaluate("() => !!document.activeElement.closest('.dlcourse-run')"):
                    break
            else:
                return Change(view, info["title"], name, None, f"{shown}; the run button was not reached by Tab")
            self._arm(view)
            self.page.keyboard.press("Space")
        try:
            self.page.wait_for_function("window.__dlcourse.state.t1 !== null", timeout=timeout_s * 1000,
                                        polling="raf")
        except Exception:  # no new picture
            return Change(view, info["title"], name, None, shown)
        state = self.page.evaluate("window.__dlcourse.state")
        return Change(view, info["title"], name, state["t1"] - state["armed"], f"{shown}; {state['text']}")

    AXE_RUN_JS = """tags => axe.run(document, {runOnly: {type: 'tag', values: tags}, elementRef: true})
      .then(r => r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.map(n => ({html: n.html.slice(0, 200), target: n.target.join(' '),
          course: !!(n.element && n.element.closest('.jp-OutputArea-output, .jp-MarkdownOutput'))}))})))"""

    def accessibility(self, axe_js: Path, tags: list[str]) -> list[dict]:
        """axe-core's violations on the page (rules with ``tags``): each node marked ``course`` when it lies in a
        cell's output or a rendered Markdown cell — the course's content — and not in JupyterLab's interface."""
        self.page.add_script_tag(path=str(axe_js))
        return self.page.evaluate(self.AXE_RUN_JS, tags)

    def _arm(self, view: int) -> None:
        self.page.evaluate(f"window.__dlcourse.arm({view})")

    def close(self) -> None:
        """Close the page, and shut the notebook's kernel down (its memory is freed for the next chapter) while
        the caller goes on."""
        try:
            self.page.close()
        except Exception:  # a renderer that crashed may refuse even this
            pass
        self.lab.shut_down_kernels(self.relative, wait=False)


def renderer_crashed(error: BaseException) -> bool:
    """Whether a Playwright error says the page's renderer process died ("Target crashed", "Page crashed"):
    Chromium itself failed, not the notebook (a failing cell or widget is reported, never a crash)."""
    return type(error).__name__ == "Error" and "crashed" in str(error)


def in_a_page(browser, lab: Lab, relative: str, check, record: Path | None = None):
    """``check(page)`` on ``relative`` opened in a new page; its result. When Chromium's renderer crashes
    under the page, the crash is written to ``record`` (a file, for people to see), the notebook's kernel is
    shut down and ``check`` runs once more from the start in a new page; a second crash fails."""
    for attempt in (1, 2):
        page = NotebookPage(browser, lab, relative)
        try:
            return check(page)
        except Exception as error:
            if attempt == 2 or not renderer_crashed(error):
                raise
            if record is not None:
                record.parent.mkdir(parents=True, exist_ok=True)
                record.write_text(f"Chromium's renderer crashed; {relative} was checked again in a new page:\n"
                                  f"{str(error)[:2000]}\n")
        finally:
            page.close()  # and its kernel shut down: the next page on the notebook waits for that
    raise AssertionError("unreachable")


@contextlib.contextmanager
def lab_in_browser(root: Path, env: dict[str, str] | None = None) -> Iterator[tuple[Lab, object]]:
    """JupyterLab serving ``root`` (see :class:`Lab`) and headless Chromium to look at it: ``(lab, browser)``,
    both closed on leaving."""
    from playwright.sync_api import sync_playwright

    with Lab(root, env=env) as lab, sync_playwright() as p:
        browser = launch(p)
        try:
            yield lab, browser
        finally:
            browser.close()


WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]  # axe-core's rules of WCAG 2.0/2.1, levels A and AA


def axe_on(page, axe_js: Path, tags: list[str] = WCAG_TAGS) -> list[dict]:
    """axe-core's violations on the page as it is now (rules with ``tags``): each one's id, impact, help, how many
    elements and the first one's HTML."""
    page.add_script_tag(path=str(axe_js))
    return page.evaluate("tags => axe.run(document, {runOnly: {type: 'tag', values: tags}})"
                         ".then(r => r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help, "
                         "nodes: v.nodes.length, first: v.nodes[0].html})))", tags)


def serious(found: list[dict]) -> list[str]:
    """The serious and critical ones among :func:`axe_on`'s violations, a line each."""
    return [f"{v['id']}: {v['help']} ({v['nodes']}; first: {v['first'][:200]})" for v in found
            if v["impact"] in ("serious", "critical")]


def launch(playwright):
    """Headless Chromium from the system (never downloaded)."""
    return playwright.chromium.launch(executable_path=chromium(), headless=True,
                                      args=["--no-sandbox", "--disable-dev-shm-usage"])
