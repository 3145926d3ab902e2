"""nbgrader preprocessors of the course: what `make release`, feedback and the late notice do to notebooks."""

from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from autograder.core.needs import KEY, SKIP, skippable


class ResultsOnly(NbGraderPreprocessor):
    """Feedback: only what the grader wrote into the test cells, nothing the student's kernel printed.

    Outputs of answer and demo cells could carry text an answer captured while the grader's tests ran;
    the student has their own outputs in their own notebook.
    """

    def preprocess_cell(self, cell, resources, index):
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and not (meta.get("grade") and not meta.get("solution")):
            cell.outputs = []
            cell.execution_count = None
        return cell, resources


# The parts of an exercise, by the suffix of their grade ids (as grade.ROLES), and how feedback names them.
PARTS = {"answer": "answer", "visible": "visible tests", "hidden": "hidden tests"}


def _heading(markdown: str) -> str:
    """The first heading of a markdown cell ("## 1 · A numerically stable softmax" → "1 · A numerically...")."""
    for line in markdown.splitlines():
        if line.lstrip().startswith("#"):
            return line.strip().lstrip("#").strip()
    return ""


class ExerciseNames(NbGraderPreprocessor):
    """Feedback: each graded cell (and answer cell, for the comments on it) named after its exercise, as
    ``metadata.dlcourse.label`` ("1 · A numerically stable softmax: hidden tests"), which the course's feedback
    template lists instead of "Test cell" (and of the answer's grade id).

    An exercise's title is the last heading above its first cell; its name is the grade id without the
    ``_answer``/``_visible``/``_hidden`` suffix.
    """

    def preprocess(self, nb, resources):
        titles: dict[str, str] = {}
        heading = ""
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                heading = _heading(cell.source) or heading
            gid = cell.metadata.get("nbgrader", {}).get("grade_id") or ""
            exercise, _, part = gid.rpartition("_")
            if exercise and part in PARTS:
                titles.setdefault(exercise, heading)
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            gid = meta.get("grade_id") or ""
            if not (meta.get("grade") or meta.get("solution")) or not gid:  # an answer: "Comment on <its label>"
                continue
            exercise, _, part = gid.rpartition("_")
            if not (exercise and part in PARTS):
                exercise, part = gid, ""
            title = titles.get(exercise) or exercise
            label = f"{title}: {PARTS[part]}" if part else title
            cell.metadata["dlcourse"] = {"exercise": exercise, "title": title, "label": label}
        return nb, resources


class LateNotice(NbGraderPreprocessor):
    """Feedback: one line, ``metadata.dlcourse.late``, on when the submission was handed in against its
    deadline under the course's late policy (days late, the penalty, the score after it); the time is the
    one the grader recorded in the results JSON."""

    results_dir = Unicode("", help="the grader's results JSON folder").tag(config=True)
    policy_file = Unicode("", help="the late policy (policy.toml)").tag(config=True)
    extensions_file = Unicode("", help="the extensions beside the roster (extensions.toml)").tag(config=True)

    def preprocess(self, nb, resources):
        import json
        from datetime import UTC, datetime
        from pathlib import Path

        from autograder.bookkeeping import policy

        info = resources.get("nbgrader", {})
        student, chapter = info.get("student"), info.get("assignment")
        if not (student and chapter and self.results_dir):
            return nb, resources
        try:
            data = json.loads((Path(self.results_dir) / f"{student}__{chapter}.json").read_text())
            submitted = datetime.fromisoformat(data["submitted"])
        except (OSError, ValueError, KeyError, TypeError):
            submitted = None
        if submitted is not None and submitted.tzinfo is None:
            submitted = submitted.replace(tzinfo=UTC)
        rules = policy.load(Path(self.policy_file)) if self.policy_file else policy.Policy()
        if self.extensions_file:
            policy.load_extensions(Path(self.extensions_file), rules)
        score, max_score = float(info.get("score", 0.0)), float(info.get("max_score", 0.0))
        late = rules.assess(student, chapter, submitted, score, max_score)
        if submitted is not None or late.deadline is not None:
            nb.metadata.setdefault("dlcourse", {})["late"] = late.describe(score, max_score)
        return nb, resources


MODEL_ANSWER_TAG = "model-answer"


class RemoveModelAnswers(NbGraderPreprocessor):
    """Release: drop the instructor's model answers to the recap questions (markdown cells tagged
    ``model-answer``), which only the copy under solutions/ keeps."""

    def preprocess(self, nb, resources):
        nb.cells = [c for c in nb.cells if MODEL_ANSWER_TAG not in c.metadata.get("tags", [])]
        return nb, resources


class MarkSkippable(NbGraderPreprocessor):
    """``make release``: mark the cells grading may leave out (run before the answers and hidden tests go)."""

    def preprocess(self, nb, resources):  # noqa: ANN001, ANN201 - nbconvert's signature
        skip = skippable(nb)
        for i, cell in enumerate(nb.cells):
            meta = cell.metadata.get(KEY, {})
            meta.pop("grading", None)
            if i in skip:
                meta["grading"] = SKIP
            if meta:
                cell.metadata[KEY] = meta
            else:
                cell.metadata.pop(KEY, None)
        return nb, resources
