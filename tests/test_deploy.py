"""The Kubernetes path (deploy/kubernetes/), checked as far as a machine without a cluster or Docker can: the
Zero to JupyterHub values against the chart's own schema (after Helm's merge with the chart's defaults), the
ngshare values against that chart's keys, the course image against the course's pins, and the students' nbgrader
configuration against the service the hub registers."""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path

import jsonschema
import pytest
import yaml
from conftest import ROOT

DEPLOY = ROOT / "deploy" / "kubernetes"
CHARTS = DEPLOY / "charts"
CHART, HUB_VERSION = "4.4.0", "5.5.0"  # the jupyterhub chart and the JupyterHub it runs


def helm_merge(defaults: dict, values: dict) -> dict:
    """What Helm validates: the chart's defaults with a values file over them (maps merged key by key, anything
    else replaced, null removing the key)."""
    out = dict(defaults)
    for key, value in values.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = helm_merge(out[key], value)
        else:
            out[key] = value
    return out


def _hub_problems(values: dict) -> list[str]:
    schema = json.loads((CHARTS / f"jupyterhub-{CHART}.values.schema.json").read_text())
    defaults = yaml.safe_load((CHARTS / f"jupyterhub-{CHART}.values.yaml").read_text())
    merged = helm_merge(defaults, values)
    errors = jsonschema.Draft7Validator(schema).iter_errors(merged)
    return [f"{'.'.join(map(str, e.path))}: {e.message}" for e in errors]


def _values() -> dict:
    return yaml.safe_load((DEPLOY / "values.yaml").read_text())


def test_the_jupyterhub_values_pass_the_charts_schema():
    assert _hub_problems(_values()) == []
    # the check can fail: a misspelt key, wrong types, a key the chart does not have
    for planted in ({"singleuser": {"cpu": {"limits": 2}}}, {"cull": {"enabled": "yes"}},
                    {"singleuser": {"image": {"tag": 2026.11}}}, {"hub": {"cookie": 1}}):
        assert _hub_problems(helm_merge(_values(), planted)), planted


def _leaves(tree: dict, prefix: str = "") -> list[str]:
    return [leaf for key, value in tree.items()
            for leaf in (_leaves(value, f"{prefix}{key}.") if isinstance(value, dict) and value else [prefix + key])]


def _free_maps(tree: dict, prefix: str = "") -> list[str]:
    """The paths whose default is an empty map: any key may go under them (resources, env, annotations)."""
    return [path for key, value in tree.items() if isinstance(value, dict)
            for path in ([prefix + key] if not value else _free_maps(value, f"{prefix}{key}."))]


def _unknown_keys(defaults: dict, ours: dict) -> list[str]:
    known, free = set(_leaves(defaults)), _free_maps(defaults)
    return [leaf for leaf in _leaves(ours) if leaf not in known and not any(leaf.startswith(f + ".") for f in free)]


def test_the_ngshare_values_use_only_the_charts_keys():
    defaults = yaml.safe_load((CHARTS / "ngshare-0.6.0.values.yaml").read_text())
    ours = yaml.safe_load((DEPLOY / "ngshare-values.yaml").read_text())
    assert _unknown_keys(defaults, ours) == []
    for planted in ({"ngshare": {"admin": ["x"]}}, {"pvc": {"size": "1Gi"}}, {"deploy": {"replicas": 1}}):
        assert _unknown_keys(defaults, planted), planted
    assert ours["ngshare"]["admins"] == _values()["hub"]["config"]["Authenticator"]["admin_users"]
    assert "hub_api_token" not in ours["ngshare"]  # passed at install time, never written into a file


def _dockerfile() -> list[tuple[str, str]]:
    """(instruction, arguments) of the Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n", " ", (DEPLOY / "Dockerfile").read_text())
    return [tuple(line.split(None, 1)) for line in text.splitlines() if line.strip() and not line.startswith("#")]


def _pins(path: Path) -> dict[str, str]:
    found = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            found[name.lower()] = version
    return found


def test_the_image_installs_the_course_pins_and_fits_the_chart():
    steps = _dockerfile()
    python = "python:{}.{}-".format(*sys.version_info[:2])  # the Python the course is tested on
    assert steps[0][0] == "FROM" and steps[0][1].startswith(python), steps[0]
    copies = [args for kind, args in steps if kind == "COPY"]
    assert any(args.split()[0] == "requirements.txt" for args in copies), copies  # the file make setup installs
    runs = " ".join(args for kind, args in steps if kind == "RUN")
    assert "-r requirements.txt -r deploy/kubernetes/image-requirements.txt" in runs
    # pip check passes on the pinned set; ngshare-exchange (its jupyter-core pin unmet on purpose) comes after it
    assert runs.index("pip check") < runs.index("--no-deps ngshare-exchange")
    course, extra = _pins(ROOT / "requirements.txt"), _pins(DEPLOY / "image-requirements.txt")
    assert not set(course) & set(extra), "a package pinned twice"
    assert course["jupyterhub"].split(".")[0] == HUB_VERSION.split(".")[0]  # the single-user server fits the hub
    assert "ipykernel install --sys-prefix --name dlcourse" in runs and "dlcourse.assets fetch" in runs
    assert "chmod -R a-w /opt/dlcourse" in runs  # the course package, data and models read-only
    assert ("USER", "1000") in steps and steps[-1] == ("CMD", '["jupyterhub-singleuser"]')
    assert _values()["singleuser"]["uid"] == 1000
    # students get nbgrader's Assignments panel, not the instructor's tools
    assert "nbgrader.server_extensions.formgrader" in runs and "@jupyter/nbgrader:create-assignment" in runs


def test_the_gpu_profile_asks_for_a_gpu_and_the_cuda_build_of_the_same_image():
    single = _values()["singleuser"]
    image = single["image"]
    gpu = [p for p in single["profileList"] if "nvidia.com/gpu" in p.get("kubespawner_override", {})
           .get("extra_resource_limits", {})]
    assert len(gpu) == 1 and [p for p in single["profileList"] if p.get("default")] != gpu
    assert gpu[0]["kubespawner_override"]["image"] == f"{image['name']}:{image['tag']}-cuda"
    assert "TORCH_INDEX" in (DEPLOY / "Dockerfile").read_text()


def test_students_nbgrader_uses_the_ngshare_service_the_hub_registers(monkeypatch):
    seen = {}
    fake = types.ModuleType("ngshare_exchange")
    fake.configureExchange = lambda c, url=None: seen.update(url=url)
    monkeypatch.setitem(sys.modules, "ngshare_exchange", fake)
    config = types.SimpleNamespace(CourseDirectory=types.SimpleNamespace())
    exec(compile((DEPLOY / "nbgrader_config.py").read_text(), "nbgrader_config.py", "exec"),
         {"get_config": lambda: config})
    service = _values()["hub"]["services"]["ngshare"]["url"]
    assert seen["url"] == f"{service}/services/ngshare"
    assert config.CourseDirectory.course_id == "dlcourse"
    assert _values()["singleuser"]["networkPolicy"]["egressAllowRules"]["privateIPs"] is True  # ngshare reachable


@pytest.mark.parametrize("name", ["values.yaml", "ngshare-values.yaml"])
def test_no_secret_is_written_into_the_values(name):
    text = (DEPLOY / name).read_text()
    assert not re.search(r"(?i)(api_?token|password|secret)\s*:\s*\S", text), name
