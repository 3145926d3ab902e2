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
