"""nbgrader preprocessors of the course."""

from nbgrader.preprocessors import NbGraderPreprocessor


class StderrToStdout(NbGraderPreprocessor):
    """Turn stderr stream outputs into stdout ones, marked, so that noise never zeroes a passing test.

    nbgrader gives a test cell 0 points when any of its output went to stderr — a deprecation warning
    printed by a library, a progress bar. Failures are ``error`` outputs, which this leaves untouched.
    """

    def preprocess_cell(self, cell, resources, index):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and output.get("name") == "stderr":
                output["name"] = "stdout"
                output["text"] = "".join("[stderr] " + line for line in output["text"].splitlines(True))
        return cell, resources


# Names under which answer cells reach the libraries and the checks. Assigning to an attribute of one of
# these (``torch.allclose = ...``, ``checks.assert_close = ...``, ``torch.Tensor.eq = ...``) or calling
# setattr/delattr on one rewires what the tests compute with.
GUARDED_ROOTS = {"torch", "np", "numpy", "F", "nn", "checks", "dlcourse", "builtins", "sys", "math"}
ALWAYS_GUARDED = {"checks", "dlcourse", "builtins"}  # any depth
SETTINGS_PREFIXES = ("torch.backends.",)  # legitimate settings a student may change


def _dotted(node) -> str | None:
    import ast

    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Subscript):  # sys.modules["torch"] = ...
        return _dotted(node.value)
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def node_module(node) -> str:
    return getattr(node, "module", None) or ""


def tampering(source: str) -> list[str]:
    """What in ``source`` rewires torch, NumPy, builtins or the checks (empty when nothing does)."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []  # the kernel reports it
    guarded, always = set(GUARDED_ROOTS), set(ALWAYS_GUARDED)
    # names bound to guarded modules: `import torch as t`, `from dlcourse import checks as c`
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            module = getattr(node, "module", None) or ""
            for alias in node.names:
                full = f"{module}.{alias.name}" if module else alias.name
                top = full.split(".")[0]
                if top in {"torch", "numpy", "dlcourse", "builtins", "sys", "math"}:
                    guarded.add(alias.asname or alias.name.split(".")[0])
                    if top in ALWAYS_GUARDED:
                        always.add(alias.asname or alias.name.split(".")[0])
    found = []
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in {"setattr", "delattr"} and node.args):
            targets = [node.args[0]]
            name = _dotted(node.args[0])
            if name and name.split(".")[0] in guarded:
                found.append(f"{node.func.id}({name}, ...)")
            continue
        elif isinstance(node, ast.Import | ast.ImportFrom):
            if any(alias.name == "builtins" for alias in node.names) or node_module(node) == "builtins":
                found.append("import builtins")
            continue
        for target in targets:
            if not isinstance(target, ast.Attribute | ast.Subscript):
                continue
            name = _dotted(target)
            if not name or "." not in name and not isinstance(target, ast.Subscript):
                continue
            root = name.split(".")[0]
            if root in always or (root in guarded and not name.startswith(SETTINGS_PREFIXES)):
                found.append(f"assignment to {name}")
    return found


class SubmissionGuard(NbGraderPreprocessor):
    """Before execution: an editable cell that rewires the libraries or the checks is not run.

    Its source is replaced by a ``raise`` that names what it tried to change, so the instructor sees why
    in the autograded notebook, and the tests that depended on that cell's definitions fail.
    """

    def preprocess_cell(self, cell, resources, index):
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or meta.get("locked") or meta.get("grade") and not meta.get("solution"):
            return cell, resources
        found = tampering(cell.source)
        if found:
            self.log.warning("cell %s rewires the test machinery: %s", index, ", ".join(found))
            message = "grader: this cell was not run because it rewires the test machinery: " + "; ".join(found)
            cell.source = f"raise RuntimeError({message!r})"
        return cell, resources
