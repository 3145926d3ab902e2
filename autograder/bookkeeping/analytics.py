"""Where the class struggled: one offline page per chapter, written by ``make grades``.

Per exercise: how its scores spread (a figure, and the same numbers as text), the mean, the shares of full and of
zero marks, the items flagged or still open for review, and the failing test messages students met most often,
grouped by test and by the kind of failure (a message's first line with its numbers taken out, so "12 of 48
values differ" and "3 of 48 values differ" are one kind). Then the late submissions, and a row per student that
a person can sort. Figures are drawn with matplotlib in greys with hatching, so they read without colour, and
each has a text alternative. Nothing here changes a grade.
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
import statistics
from collections import Counter, defaultdict
from pathlib import Path

from autograder.bookkeeping import export

SHOWN_MESSAGES = 5


def _kind(message: str) -> str:
    """A failing test's message reduced to its kind: the first line, numbers and quoted values replaced by #."""
    first = (message or "").strip().splitlines()[0] if (message or "").strip() else "(no message)"
    first = re.sub(r"-?\d+(\.\d+)?(e-?\d+)?", "#", first)
    first = re.sub(r"'[^']*'", "'…'", first)
    return first[:200]


def failing_messages(results: Path, chapter: str) -> dict[str, Counter]:
    """Per exercise: Counter of (test, kind of message) over the failing tests in the results JSON."""
    found: dict[str, Counter] = defaultdict(Counter)
    for path in sorted(results.glob(f"*__{chapter}.json")) if results.exists() else []:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        for test in data.get("tests", []):
            if float(test.get("score", 0)) < float(test.get("points", 0)):
                found[test.get("exercise", "?")][(test.get("grade_id", "?"), _kind(test.get("message", "")))] += 1
    return found


def _figure(values: list[float], points: float, title: str) -> tuple[str, str]:
    """A histogram of ``values`` (0 … points) as a PNG data URL, and its text alternative."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bins = sorted({0.0, points, *[round(points * i / 4, 4) for i in range(5)]})
    counts = [sum(1 for v in values if (lo <= v < hi) or (hi == points and v == points))
              for lo, hi in zip(bins, bins[1:], strict=False)]
    fig, ax = plt.subplots(figsize=(4.2, 2.2), dpi=100)
    labels = [f"{lo:g}–{hi:g}" for lo, hi in zip(bins, bins[1:], strict=False)]
    ax.bar(range(len(counts)), counts, color="#bbbbbb", edgecolor="#111111", hatch="//")
    ax.set_xticks(range(len(counts)), labels, fontsize=10)
    ax.set_ylabel("students", fontsize=10)
    ax.set_xlabel(f"points (of {points:g})", fontsize=10)
    ax.set_title(title, fontsize=11)
    for i, c in enumerate(counts):
        ax.text(i, c, str(c), ha="center", va="bottom", fontsize=10)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    alt = f"{title}: " + ", ".join(f"{c} student(s) with {label} points" for c, label in zip(counts, labels,
                                                                                               strict=True))
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode(), alt


def chapter_page(table: export.Table, chapter: str, results: Path, policy=None) -> str:
    """The chapter's page (HTML, one file, no script or style fetched from anywhere)."""
    points = table.chapters.get(chapter, {})
    handed = [sid for sid in table.students if (sid, chapter) in table.scores]
    messages = failing_messages(results, chapter)
    review = [r for r in table.review if r["chapter"] == chapter]
    marks = {sid: export.mark(table, sid, chapter, policy) for sid in handed}
    totals = [marks[sid].final for sid in handed if marks[sid].final is not None]
    full = sum(points.values())
    e = html.escape
    parts = [f"<h1>Class analytics, {e(chapter)}</h1>",
             f"<p>{len(handed)} submission(s) of {len(table.students)} student(s); total after the late policy: "
             + (f"mean {statistics.mean(totals):.2f}, median {statistics.median(totals):.2f} of {full:g}"
                if totals else "none graded") + ". Nothing here changes a grade.</p>",
             "<h2>Exercises</h2><table><caption>Per exercise: the scores, and what still needs a person"
             "</caption><tr><th scope='col'>exercise</th><th scope='col'>points</th><th scope='col'>mean</th>"
             "<th scope='col'>full marks</th><th scope='col'>zero</th><th scope='col'>flagged for review</th>"
             "<th scope='col'>still open</th></tr>"]
    per_exercise = {}
    for ex, pts in points.items():
        got = [table.scores[(sid, chapter)].get(ex, 0.0) for sid in handed]
        flagged = [r for r in review if r["exercise"] == ex]
        still = [r for r in flagged if r.get("status") == "open"]
        per_exercise[ex] = got
        n = max(len(got), 1)
        parts.append(f"<tr><th scope='row'>{e(ex)}</th><td>{pts:g}</td><td>"
                     f"{(statistics.mean(got) if got else 0):.2f}</td><td>{sum(g >= pts for g in got) / n:.0%}</td>"
                     f"<td>{sum(g == 0 for g in got) / n:.0%}</td><td>{len(flagged)}</td><td>{len(still)}</td></tr>")
    parts.append("</table>")
    for ex, got in per_exercise.items():
        parts.append(f"<h3>{e(ex)}</h3>")
        if got:
            src, alt = _figure(got, points[ex], f"{ex}: scores")
            parts.append(f"<figure><img src='{src}' alt='{e(alt)}'><figcaption>{e(alt)}</figcaption></figure>")
        common = messages.get(ex, Counter()).most_common(SHOWN_MESSAGES)
        if common:
            parts.append("<table><caption>The failing tests students met most often</caption><tr>"
                         "<th scope='col'>students</th><th scope='col'>test</th><th scope='col'>message (its kind)"
                         "</th></tr>" + "".join(f"<tr><td>{count}</td><td>{e(test)}</td><td><code>{e(kind)}</code>"
                                                f"</td></tr>" for (test, kind), count in common) + "</table>")
        else:
            parts.append("<p>No failing test recorded.</p>")
    late = [(sid, marks[sid]) for sid in handed if marks[sid].late is not None and marks[sid].late.days > 0]
    parts.append("<h2>Late submissions</h2>" + ("<ul>" + "".join(
        f"<li>{e(sid)}: {m.late.days:g} day(s) late, −{m.late.penalty:g} points ({m.raw:g} → {m.final:g})</li>"
        for sid, m in late) + "</ul>" if late else "<p>None.</p>"))
    header = "".join(f"<th scope='col'><button type='button' data-column='{i}'>{e(h)}</button></th>" for i, h in
                     enumerate(["student", "name", "submitted", "days late", *points, "total", "after policy"]))
    rows = []
    for sid in table.students:
        m = marks.get(sid)
        got = table.scores.get((sid, chapter), {})
        when = table.submitted.get((sid, chapter))
        who = table.students[sid]
        cells = [sid, f"{who.get('first_name', '')} {who.get('last_name', '')}".strip(),
                 when.strftime("%Y-%m-%d %H:%M") if when else ("" if m else "not submitted"),
                 f"{m.late.days:g}" if m and m.late is not None else "",
                 *[f"{got[ex]:g}" if ex in got else "" for ex in points],
                 f"{m.raw:g}" if m and m.raw is not None else "", f"{m.final:g}" if m and m.final is not None else ""]
        rows.append("<tr>" + "".join(f"<td>{e(c)}</td>" for c in cells) + "</tr>")
    parts.append("<h2>Students</h2><p>Press a column's button to sort by it (again: the other way).</p>"
                 f"<table id='students'><caption>One row per student</caption><thead><tr>{header}</tr></thead>"
                 f"<tbody>{''.join(rows)}</tbody></table>")
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#111;font-size:16px}"
             "table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #555;padding:2px 8px;"
             "text-align:left}caption{text-align:left;font-weight:bold}button{font:inherit;background:none;"
             "border:none;text-decoration:underline;cursor:pointer;padding:0}button:focus{outline:3px solid #000}"
             "figcaption{font-size:14px}")
    script = ("document.querySelectorAll('#students button').forEach(function(b){b.addEventListener('click',"
              "function(){var i=+b.dataset.column,t=b.closest('table').tBodies[0],r=[].slice.call(t.rows),"
              "d=b.dataset.dir==='up'?-1:1;b.dataset.dir=d===1?'up':'down';r.sort(function(x,y){"
              "var p=x.cells[i].textContent,q=y.cells[i].textContent,a=parseFloat(p),c=parseFloat(q);"
              "return d*((isNaN(a)||isNaN(c))?p.localeCompare(q):a-c)});r.forEach(function(x){t.appendChild(x)})"
              "})});")
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Class analytics, {e(chapter)}"
            f"</title><style>{style}</style></head><body>{''.join(parts)}<script>{script}</script></body></html>\n")


def write_pages(table: export.Table, chapters: list[str], results: Path, out: Path, policy=None) -> list[Path]:
    """One page per chapter under ``out``; the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for chapter in chapters:
        path = out / f"{chapter}.html"
        path.write_text(chapter_page(table, chapter, results, policy))
        written.append(path)
    return written
