# Deep Learning from Scratch — the commands students, instructors and lecturers use.
# Run `make help` for the list.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
export PATH := $(abspath $(BIN)):$(PATH)
export HF_HUB_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
STAMP  := $(VENV)/.installed
CH     ?=
UNSAFE ?=
HIDDEN ?=
PIPELINE := $(PY) autograder/bookkeeping/pipeline.py
# Jupyter refuses to run as root without --allow-root (containers, some lab machines); ARGS go to jupyter lab.
AS_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)
ARGS   ?=
# Test workers: one more than the cores, at most 8. A worker often waits (a page loading in the browser, a server
# or kernel starting, a grading subprocess), so one per core leaves the CPU idle: on 2 cores the suite kept the
# CPU 92 % busy with two workers (19:29) and 99 % with three (17:22).
TEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(min(8, (os.cpu_count() or 1) + 1))')


.PHONY: instructor-only help setup lab lecture formgrader validate test test-fast check lint release autograde feedback grades zip-collect similarity bundle gradescope hub hub-release hub-collect hub-feedback bench gpu-check checkpoints clean-grading html site

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

# `make setup` reports every check; the targets that run it first report only what they did or what is missing.
QUIET_SETUP := $(if $(filter setup,$(MAKECMDGOALS)),,1)

setup: export DLCOURSE_QUIET_SETUP := $(QUIET_SETUP)
setup: $(STAMP) ## create .venv, install pinned packages, kernel, nbgrader extension, pretrained models
	@$(PY) -m dlcourse fetch
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  echo "installing bubblewrap (the autograder's sandbox)" && apt-get install -y -qq bubblewrap >/dev/null 2>&1 || \
	  { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq bubblewrap >/dev/null 2>&1; }; } || true
	@command -v chromium >/dev/null || [ ! -d tests ] || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  echo "installing Debian's chromium (the browser tests drive JupyterLab in it)" && \
	  { apt-get install -y -qq chromium >/dev/null 2>&1 || \
	    { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1; }; }; } || \
	  echo "no chromium: the browser tests will be skipped (apt-get install chromium, as root, to run them)"
	@# rfc3987-syntax comes in through jupyter-events' jsonschema[format-nongpl]; it builds a parser when imported
	@# (about 2 s in every process that imports nbformat: each grader, nbgrader command and Jupyter server) and only
	@# checks the "iri" string format, which nothing here validates. jsonschema skips that check without it.
	@# (pip itself takes about a second to start: it runs only while the package is there)
	@! ls -d $(VENV)/lib/python*/site-packages/rfc3987_syntax* >/dev/null 2>&1 || \
	  $(PY) -m pip uninstall --quiet --yes rfc3987-syntax >/dev/null 2>&1 || true
	@if [ -f autograder/bookkeeping/offline.py ]; then $(PY) autograder/bookkeeping/offline.py fetch || \
	  echo "make html will need CDN=1 (its pages will load their scripts from the internet)"; fi
	@if [ -f autograder/core/sandbox.py ]; then $(PY) autograder/core/sandbox.py check || true; fi
	@# make hub's proxy (JupyterHub's configurable-http-proxy is a Node.js program, from the npm registry)
	@[ ! -f autograder/platforms/hub.py ] || test -x .hub/node_modules/.bin/configurable-http-proxy || \
	  { command -v npm >/dev/null && npm install --silent --no-audit --no-fund --prefix .hub \
	    configurable-http-proxy@5.3.0 >/dev/null 2>&1; } || \
	  echo "no configurable-http-proxy (needs Node.js and npm): make hub will not start"
	@[ -n "$(QUIET_SETUP)" ] || echo "setup complete: run 'make test' to check everything, 'make lab' to start"

$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; v = sys.version_info; sys.exit(0 if v >= (3, 11) else "Python >= 3.11 is needed, this is " + sys.version.split()[0] + ": set PYTHON=python3.11 (or newer)")'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) || { echo "could not create $(VENV) (is the venv module installed? Debian: apt-get install python3-venv)"; exit 1; }
	@echo "installing pinned packages into $(VENV) (a few minutes the first time)"
	@$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt 2>&1 | grep -v "^WARNING: Location" ; \
	  $(PY) -c 'import torch, transformers, nbgrader, ipywidgets' || { echo "package installation failed: see the pip messages above"; exit 1; }
	@$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e . 2>&1 | grep -v "^WARNING: Location" ; \
	  $(PY) -c 'import dlcourse' || { echo "installing the dlcourse package failed"; exit 1; }
	@$(PY) -m ipykernel install --sys-prefix --name dlcourse --display-name "Python 3 (dlcourse)" \
	  --env HF_HUB_OFFLINE 1 --env HF_DATASETS_OFFLINE 1 >/dev/null
	@$(BIN)/jupyter labextension enable nbgrader >/dev/null 2>&1 || true
	@$(BIN)/jupyter labextension disable "@jupyterlab/apputils-extension:announcements" >/dev/null 2>&1 || true
	@# jupytext is here for autograder/bookkeeping/nbtext.py; the course's notebooks are .ipynb, so its JupyterLab parts stay off
	@$(BIN)/jupyter labextension disable jupyterlab-jupytext >/dev/null 2>&1 || true
	@rm -f $(VENV)/etc/jupyter/jupyter_server_config.d/jupytext.json $(VENV)/etc/jupyter/jupyter_notebook_config.d/jupytext.json
	@touch $(STAMP)

lab: setup ## JupyterLab on course/ with the course kernel, nbgrader's Validate button and none of its instructor tools (ARGS="--port=8899 --no-browser" to jupyter lab)
	$(PY) -m dlcourse lab $(ARGS)

lecture: instructor-only setup ## teach a chapter: JupyterLab on lecture/CH/, a copy of the chapter with every answer and slide metadata, never written back into solutions/; lecture mode: shipped results, a long demo runs when its RUN_LIVE switch is on (CH=04_gpt_decoding; PROJECTOR=1.6 enlarges figures and widgets)
	@test -n "$(CH)" || { echo "say which chapter: make lecture CH=04_gpt_decoding"; exit 2; }
	@$(PY) autograder/bookkeeping/lecture.py prepare --chapter $(CH)
	@$(if $(AS_ROOT),echo "WARNING: running as root: JupyterLab is started with --allow-root; its kernels can change anything on this machine")
	DLCOURSE_LECTURE=1 DLCOURSE_PRESENTATION=$(PROJECTOR) $(BIN)/jupyter lab --ServerApp.root_dir=lecture/$(CH) \
	  --ServerApp.default_url=/lab/tree/$(CH).ipynb $(AS_ROOT) \
	  --ServerApp.jpserver_extensions='{"nbgrader.server_extensions.formgrader": False}' $(ARGS)

formgrader: instructor-only setup ## nbgrader's formgrader (manual grading, the gradebook) in JupyterLab started in autograder/
	@$(if $(AS_ROOT),echo "WARNING: running as root: JupyterLab is started with --allow-root; its kernels can change anything on this machine")
	@echo "formgrader: open Nbgrader > Formgrader in JupyterLab (or <server>/formgrader); grade what review.csv lists as open"
	@echo "formgrader's pages open with a notice read from the gradebook and the policy: its scores are before the late penalty (the notice lists who loses points, and make grades exports the totals after it), and what is still open for review; its due dates are the policy's deadlines and its Generate button runs the course's release"
	cd autograder && $(abspath $(BIN))/jupyter lab --ServerApp.root_dir="$(CURDIR)" $(AS_ROOT) $(ARGS)

validate: setup ## check a notebook before submitting: NB=course/07_gan/07_gan.ipynb (exit status 1 if a test fails)
	@test -n "$(NB)" || { echo "say which notebook: make validate NB=course/<chapter>/<chapter>.ipynb"; exit 2; }
	$(PY) -m dlcourse validate $(NB)

test: instructor-only setup ## the whole test suite (what CI runs)
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup --durations=25

test-fast: instructor-only setup ## the suite without notebook kernels and the nbgrader pipeline
	$(PY) -m pytest -m "not notebook and not pipeline"

check: instructor-only ## fast consistency checks: course/ regenerated, solutions/ clean, nbgrader metadata, lint
	@test -x $(PY) || { echo "run 'make setup' first"; exit 1; }
	@$(BIN)/ruff check --quiet dlcourse autograder tests bench solutions
	@$(PIPELINE) check

lint: ## ruff, with fixes applied
	$(BIN)/ruff check --fix dlcourse autograder tests bench solutions

release: instructor-only setup ## generate course/ from solutions/ (all chapters, or CH=01_seq2seq_attention)
	$(PIPELINE) release $(if $(CH),--chapter $(CH))

autograde: instructor-only setup ## grade submissions under autograder/submitted/<student>/<chapter>/ (JOBS=N, SCHEDULER=tcp://host:8786, FORCE=1, ALL_CELLS=1)
	$(PIPELINE) autograde $(if $(CH),--chapter $(CH)) $(if $(UNSAFE),--unsafe) $(if $(JOBS),--jobs $(JOBS)) \
	  $(if $(SCHEDULER),--scheduler $(SCHEDULER)) $(if $(FORCE),--force) $(if $(ALL_CELLS),--all-cells)

feedback: instructor-only setup ## HTML feedback (hidden tests removed) under autograder/feedback/; lists the review items still open (STRICT=1: writes nothing while one is)
	$(PIPELINE) feedback $(if $(STRICT),--strict)

grades: instructor-only setup ## export grades to autograder/grades.csv and review.csv (FORMAT=canvas or moodle, CH="00_welcome 01_seq2seq_attention", MISSING=zero; STRICT=1: nothing while a review item is open)
	$(PIPELINE) grades $(if $(FORMAT),--format $(FORMAT)) $(foreach c,$(CH),--chapter $(c)) $(if $(MISSING),--missing $(MISSING)) $(if $(STRICT),--strict)

zip-collect: instructor-only setup ## file an LMS's bulk download under autograder/submitted/: put the zip (Canvas, Moodle or Blackboard) in autograder/downloaded/CH/archive/, then make zip-collect CH=00_welcome
	@test -n "$(CH)" || { echo "say which chapter: make zip-collect CH=00_welcome"; exit 2; }
	$(PIPELINE) zip-collect --chapter $(CH)

hub: instructor-only setup ## a JupyterHub for the class on this machine: an account per roster id (ROSTER=autograder/roster.csv), the repository closed to students, nbgrader's exchange in HUB_ROOT (default /srv/dlcourse), INSTRUCTOR=instructor its admin; as root; HUB_IP=0.0.0.0 HUB_PORT=8000 SSL_CERT= SSL_KEY= for HTTPS
	$(PY) autograder/platforms/hub.py start $(if $(ROSTER),--roster $(ROSTER)) $(if $(HUB_ROOT),--root $(HUB_ROOT)) \
	  $(if $(HUB_IP),--ip $(HUB_IP)) $(if $(HUB_PORT),--port $(HUB_PORT)) $(if $(INSTRUCTOR),--instructor $(INSTRUCTOR)) \
	  $(if $(SSL_CERT),--ssl-cert $(SSL_CERT)) $(if $(SSL_KEY),--ssl-key $(SSL_KEY))

hub-release: instructor-only setup ## put a released chapter on the hub's exchange, for students to fetch (CH=00_welcome)
	@test -n "$(CH)" || { echo "say which chapter: make hub-release CH=00_welcome"; exit 2; }
	$(PY) autograder/platforms/hub.py release --chapter $(CH) $(if $(HUB_ROOT),--root $(HUB_ROOT))

hub-collect: instructor-only setup ## bring the chapter's submissions from the hub's exchange into autograder/submitted/ (CH=00_welcome); then make autograde
	@test -n "$(CH)" || { echo "say which chapter: make hub-collect CH=00_welcome"; exit 2; }
	$(PY) autograder/platforms/hub.py collect --chapter $(CH) $(if $(HUB_ROOT),--root $(HUB_ROOT))

hub-feedback: instructor-only setup ## make feedback, and return the chapter's feedback to students through the hub's exchange (CH=00_welcome)
	@test -n "$(CH)" || { echo "say which chapter: make hub-feedback CH=00_welcome"; exit 2; }
	$(PY) autograder/platforms/hub.py feedback --chapter $(CH) $(if $(HUB_ROOT),--root $(HUB_ROOT))

similarity: instructor-only setup ## which submissions look copied: every pair compared per answer cell and whole notebook, and each against the solution and an archive of earlier terms (CH=07_gan; ARCHIVE=folder of <term>/<student>/<chapter>.ipynb; THRESHOLD=0.7); autograder/similarity/<CH>/similarity.html and .csv; changes no grade
	@test -n "$(CH)" || { echo "say which chapter: make similarity CH=07_gan"; exit 2; }
	$(PIPELINE) similarity $(CH) $(if $(ARCHIVE),--archive $(ARCHIVE)) $(if $(THRESHOLD),--threshold $(THRESHOLD))

bundle: instructor-only setup ## dist/dlcourse-student.zip: what students get (no solutions, no hidden tests)
	$(PIPELINE) bundle

gradescope: instructor-only ## dist/gradescope/<CH>.zip, Gradescope's autograder for a chapter (CH=07_gan; HIDDEN=after_published, after_due_date, visible or hidden: when students see the hidden tests' results)
	@test -x $(PY) || { echo "run 'make setup' first"; exit 1; }
	@test -n "$(CH)" || { echo "say which chapter: make gradescope CH=07_gan"; exit 2; }
	$(PY) autograder/platforms/gradescope.py build --chapter $(CH) $(if $(HIDDEN),--hidden $(HIDDEN))

html: instructor-only setup ## every chapter executed (full mode; FAST=1 for a quick one) as HTML under build/html/, a students' copy without solutions and an instructor's copy; the pages work offline (CDN=1: scripts from the internet)
	$(PY) autograder/bookkeeping/render.py $(if $(CH),--chapter $(CH)) $(if $(FAST),--fast) $(if $(CDN),--cdn) $(if $(CELL_TIMEOUT),--cell-timeout $(CELL_TIMEOUT))

site: instructor-only setup ## the course's website in build/site/ (index.html opens from disk, offline): the students' chapters as make html executed them (a chapter it has not executed is executed first, FAST mode; FULL=1 for full mode), the four guides, navigation and search (CH=… for some chapters)
	$(PY) autograder/bookkeeping/website.py $(if $(CH),--chapter $(CH)) $(if $(FULL),--full)

gpu-check: instructor-only setup ## on a machine with an NVIDIA GPU: every chapter in full mode on the GPU and its reference answers graded with the kernel there; time, peak GPU memory, errors and claims per chapter in bench/results/gpu.json (without CUDA it says so and exits 0)
	$(PY) bench/gpu.py $(CH)

bench: instructor-only setup ## benchmarks; results go to bench/results/ (widgets in a browser: bench/browser.py; every chapter's full mode three times, two seeds, one and two threads, with its errors and its claims' spread: bench/full_runs.py; how soon a lecture's widgets answer after Run All: bench/lecture.py; grading a class: bench/grading.py, long; against plain nbgrader: bench/versus.py; chapters 04 and 06 against public recipes: bench/compare/, an hour and more)
	$(PY) bench/run.py
	$(PY) bench/full_runs.py
	$(PY) bench/browser.py
	$(PY) bench/lecture.py
	$(PY) bench/grading.py
	$(PY) bench/versus.py
	@$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -r bench/requirements.txt 2>&1 | \
	  grep -v "^WARNING: Location" || true
	$(PY) bench/compare/gpt.py sweep --again
	$(PY) bench/compare/vit.py

# Chapters whose notebooks train what data/ ships (a checkpoint, or chapter 10's schedule runs), saved only
# when the demo reaches its target.
CHECKPOINT_CHAPTERS := 01_seq2seq_attention 02_transformer_blocks 03_bert_mlm 04_gpt_decoding 05_t5 06_vit 07_gan 08_vae 09_sparse_attention 10_optimizers_schedulers 11_self_supervised

checkpoints: instructor-only setup ## retrain the checkpoints in data/ in full mode and record the metrics they reached
	@for ch in $(if $(CH),$(CH),$(CHECKPOINT_CHAPTERS)); do \
	  echo "training the checkpoint of $$ch (full mode; the executed copy goes to build/checkpoints-$$ch.ipynb)"; \
	  mkdir -p build; \
	  DLCOURSE_FAST=0 DLCOURSE_SAVE_CHECKPOINTS=1 $(PY) autograder/bookkeeping/kernels.py solutions/$$ch/$$ch.ipynb \
	    --timeout 1200 --out build/checkpoints-$$ch.ipynb || exit 1; \
	done
	@$(PY) -c 'import json; [print(k, v.get("metrics")) for k, v in json.load(open("data/manifest.json")).items()]'

instructor-only:
	@test -d solutions -a -d autograder -a -d tests || { \
	  echo "this target needs the instructor repository (solutions/, autograder/, tests/): this is the student bundle."; \
	  echo "Students: 'make setup', then 'make lab'."; exit 1; }

clean-grading: ## remove submitted/, autograded/, feedback/ and the gradebook
	rm -rf autograder/submitted autograder/autograded autograder/feedback autograder/results autograder/similarity autograder/analytics autograder/gradebook.db autograder/.gradebook-sync.json \
	  autograder/grades.csv autograder/grades-*.csv autograder/review.csv
