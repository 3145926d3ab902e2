#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image of chapter @CHAPTER@
# (made by `make gradescope CH=@CHAPTER@` in the course repository; see its README, "Grading on Gradescope").
#
# It installs what grading needs and nothing is fetched later, at grading time:
#   * Python >= 3.11 (the course's minimum) and a virtual environment in $VENV (default /opt/dlcourse-venv),
#   * the pinned requirements.txt, with torch 2.13.0 from PyTorch's CPU index (no multi-GB CUDA build),
#   * the course package (dlcourse) from this folder, editable, so that it finds data/ and models/ here,
#   * the pretrained models the chapter needs, through the course's own commands (dlcourse.assets, dlcourse.gpt.lm),
#   * bubblewrap (the grader's sandbox) when apt has it; without working namespaces the grader runs the kernel
#     as an unprivileged user instead (setpriv, util-linux).
#
# Environment (for trying the package outside Gradescope, as the course's tests do):
#   DLCOURSE_GRADESCOPE_ROOT    the /autograder folder (default /autograder); this package is in $ROOT/source
#   DLCOURSE_GRADESCOPE_PYTHON  an interpreter to use instead of making $VENV; every step whose result is
#                               already there (checked by import or by file) is skipped, so nothing is downloaded
set -euo pipefail

ROOT="${DLCOURSE_GRADESCOPE_ROOT:-/autograder}"
SOURCE="$ROOT/source"
VENV="${DLCOURSE_GRADESCOPE_VENV:-/opt/dlcourse-venv}"
TORCH_INDEX="https://download.pytorch.org/whl/cpu"
MODELS="@MODELS@"          # models/ entries this chapter needs (empty: none)
PREPARE_LM="@PREPARE_LM@"  # 1: SmolLM2 is converted once (python -m dlcourse.gpt.lm prepare)

say() { echo "[dlcourse setup] $*"; }
fail() { echo "[dlcourse setup] ERROR: $*" >&2; exit 1; }

APT_UPDATED=0
apt_install() {  # apt_install PACKAGE...: true when apt installed them (root with apt-get only)
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 || return 1
  if [ "$APT_UPDATED" = 0 ]; then
    apt-get update -qq >/dev/null 2>&1 || true
    APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1
}

recent_enough() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' >/dev/null 2>&1; }

# --------------------------------------------------------------------------------------------- Python
if [ -n "${DLCOURSE_GRADESCOPE_PYTHON:-}" ]; then
  PY="$DLCOURSE_GRADESCOPE_PYTHON"
  recent_enough "$PY" || fail "$PY is not Python >= 3.11 (the course needs 3.11 or newer)"
  say "using $PY ($("$PY" --version 2>&1))"
else
  BASE=""
  for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && recent_enough "$(command -v "$candidate")"; then
      BASE="$(command -v "$candidate")"
      break
    fi
  done
  if [ -z "$BASE" ] && apt_install python3.11 python3.11-venv; then
    BASE="$(command -v python3.11 || true)"
  fi
  if [ -z "$BASE" ]; then
    fail "the course needs Python >= 3.11; this image has $(python3 --version 2>&1 || echo 'no python3'). In \
Gradescope's autograder settings choose the Ubuntu 24.04 base image (Python 3.12) and upload the zip again, or \
install Python 3.11+ in the image (deadsnakes: apt-get install python3.11 python3.11-venv)."
  fi
  if [ ! -x "$VENV/bin/python" ]; then
    "$BASE" -m venv "$VENV" >/dev/null 2>&1 || {
      apt_install "$(basename "$BASE")-venv" || apt_install python3-venv || true
      "$BASE" -m venv "$VENV" || fail "could not create $VENV with $BASE (apt-get install python3-venv)"
    }
  fi
  PY="$VENV/bin/python"
  say "using $PY ($("$PY" --version 2>&1)), a virtual environment of $BASE"
fi

# ------------------------------------------------------------------------------------------- packages
if "$PY" -c 'import torch, numpy, transformers, safetensors, sklearn, nbformat, nbgrader, jupyter_client, ipykernel' \
    >/dev/null 2>&1; then
  say "the pinned packages are already installed ($("$PY" -c 'import torch; print("torch", torch.__version__)'))"
else
  say "installing torch 2.13.0 (CPU build) and the pinned requirements (a few minutes)"
  "$PY" -m pip install --quiet --disable-pip-version-check --index-url "$TORCH_INDEX" "torch==2.13.0" \
    || fail "pip could not install torch 2.13.0 from $TORCH_INDEX"
  "$PY" -m pip install --quiet --disable-pip-version-check --extra-index-url "$TORCH_INDEX" \
    -r "$SOURCE/requirements.txt" || fail "pip could not install $SOURCE/requirements.txt"
  # as the course's make setup does: this optional jsonschema checker costs about 2 s in every grading process
  "$PY" -m pip uninstall --quiet --yes rfc3987-syntax >/dev/null 2>&1 || true
fi
if "$PY" -c 'import dlcourse' >/dev/null 2>&1; then
  say "the course package is already installed ($("$PY" -c 'import dlcourse; print(dlcourse.__path__[0])'))"
else
  say "installing the course package from $SOURCE"
  "$PY" -m pip install --quiet --disable-pip-version-check --no-deps -e "$SOURCE" \
    || fail "pip could not install the course package from $SOURCE"
fi

# --------------------------------------------------------------------------------- pretrained models
if [ -n "$MODELS" ]; then
  # fetch checks what is there first (sha256) and downloads only what is missing or wrong
  HF_HUB_OFFLINE=1 "$PY" -m dlcourse.assets fetch || fail "the pretrained models could not be fetched"
fi
if [ "$PREPARE_LM" = 1 ]; then
  CONVERTED="$("$PY" -c 'from dlcourse.assets import MODELS_DIR; print(MODELS_DIR)')/smollm2-135m-instruct/transformers"
  if [ -f "$CONVERTED/model.safetensors" ]; then
    say "SmolLM2 is already converted ($CONVERTED)"
  else
    HF_HUB_OFFLINE=1 "$PY" -m dlcourse.gpt.lm prepare || fail "SmolLM2 could not be converted"
  fi
fi

# ----------------------------------------------------------------------------------------- sandbox
if command -v bwrap >/dev/null 2>&1; then
  say "bubblewrap is installed"
elif apt_install bubblewrap; then
  say "installed bubblewrap"
else
  say "no bubblewrap (apt has none here): the grader will run the kernel as an unprivileged user"
fi
command -v setpriv >/dev/null 2>&1 || apt_install util-linux || true

# The kernel runs as an unprivileged user where namespaces are refused: it must be able to read the virtual
# environment. The scripts stay executable whatever the unzipping did to their modes.
if [ -z "${DLCOURSE_GRADESCOPE_PYTHON:-}" ]; then
  chmod -R a+rX "$VENV"
fi
for script in "$SOURCE/run_autograder" "$ROOT/run_autograder"; do
  if [ -f "$script" ]; then chmod a+x "$script"; fi
done
# The grader and the source notebook readable by root alone, what a student has readable by everyone; then
# what grading will use here.
"$PY" "$SOURCE/autograder/platforms/gradescope.py" check --root "$ROOT" || fail "the grader cannot run here (see above)"
