# Sundial: `make local` runs the whole system on this machine; `make test` runs every test.
# Both install what is missing first, so they work from a fresh clone.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NODE_STAMP := node_modules/.installed
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

.PHONY: local test unit lint typecheck chaos bench scale scale-calibrate synth deploy diff smoke install browser clean mutants pins

install: $(STAMP) $(NODE_STAMP)

# constraints.txt holds the versions the tests ran with; the install takes exactly those.
$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@# A venv made before the distribution took its registry name holds it as `sundial`.
	$(BIN)/python -m pip uninstall --quiet --yes sundial 2>/dev/null || true
	$(BIN)/python -m pip install --quiet --constraint constraints.txt -e '.[dev]'
	touch $@

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The emulator needs a region; a deploy takes the one from the user's profile.
local test unit chaos bench mutants: export AWS_DEFAULT_REGION ?= us-east-1

# The model test's budget in `make test`, which every mutation of `make mutants` must be killed
# within (docs/testing.md): examples of so many steps each.
MODEL_EXAMPLES ?= 150
MODEL_STEPS ?= 30
test mutants: export SUNDIAL_MODEL_EXAMPLES ?= $(MODEL_EXAMPLES)
test mutants: export SUNDIAL_MODEL_STEPS ?= $(MODEL_STEPS)

local: $(STAMP)
	$(BIN)/sundial local

# Five runs side by side on two cores, in two kinds. The suites that run the local stack as processes
# mostly wait on its ticks, targets and browser: the e2e suite in two runs, each with its own stack,
# and the console's suites in one. The in-process suites, which keep the cores busy, in two runs of
# about the same length: the one that records every AWS call (tests/functions and tests/adapter) with
# the IAM contract that checks them after it (tests/infra), and the rest (the model, chaos and scale
# searches among them), whose output is shown as it comes. Each in-process run names its slowest
# tests; the other runs' output follows, and any run's failure fails the target.
STACK_SUITES := tests/e2e
STACK_SUITES_FIRST := $(addprefix tests/e2e/,test_limits.py test_user_actions_outside.py \
	test_occurrences.py test_crash.py test_bulk_crash.py test_startup.py test_faults_outside.py)
CONSOLE_SUITES := tests/local_state tests/console tests/client
PROCESS_SUITES := $(STACK_SUITES) $(CONSOLE_SUITES)
RECORDED_SUITES := tests/functions tests/adapter tests/infra tests/unit
PYTEST := $(BIN)/python -m pytest -q -p no:cacheprovider
test: $(STAMP) $(NODE_STAMP) lint typecheck browser
	@$(PYTEST) $(STACK_SUITES_FIRST) > .test-stack-1.log 2>&1 & stack_1=$$!; \
	$(PYTEST) $(STACK_SUITES) $(addprefix --ignore=,$(STACK_SUITES_FIRST)) > .test-stack-2.log 2>&1 & stack_2=$$!; \
	$(PYTEST) $(CONSOLE_SUITES) > .test-console.log 2>&1 & console=$$!; \
	$(PYTEST) --durations=15 $(RECORDED_SUITES) > .test-recorded.log 2>&1 & recorded=$$!; \
	$(PYTEST) --durations=15 $(addprefix --ignore=,$(PROCESS_SUITES) $(RECORDED_SUITES)); rest=$$?; \
	failed=$$([ $$rest -eq 0 ] || echo "the rest of the in-process suites"); \
	for run in recorded:$$recorded:"$(RECORDED_SUITES)" stack-1:$$stack_1:"$(STACK_SUITES) (first part)" \
		stack-2:$$stack_2:"$(STACK_SUITES) (second part)" console:$$console:"$(CONSOLE_SUITES)"; do \
		log=$${run%%:*}; rest_of=$${run#*:}; pid=$${rest_of%%:*}; name=$${rest_of#*:}; \
		wait $$pid || failed="$$failed, $$name"; \
		echo; echo "== $$name"; cat .test-$$log.log; rm -f .test-$$log.log; \
	done; \
	if [ -n "$$failed" ]; then echo; echo "make test: failed in $${failed#, }"; exit 1; fi

# The console's browser tests drive Debian's headless Chromium through its chromium-driver. Installed
# only when missing, and only where that is possible (root with apt-get, as CI runs on a fresh
# clone); elsewhere the tests say why they skip.
BROWSER_PACKAGES := chromium chromium-driver
browser:
	@if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing $(BROWSER_PACKAGES) for the console's browser tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(BROWSER_PACKAGES); \
	else \
		echo "no chromium and chromedriver, and no apt-get as root to install them: the console's browser tests will skip"; \
	fi

# Plants each named bug of tests/mutants/mutations.py in a scratch copy, one at a time, and prints
# which tests killed it and how fast: the model test at `make test`'s budget, then the unit and
# adapter tests. Niced: it runs for a while. MUTANTS_ARGS="--only NAME --model-only --seed N".
# MUTANTS_ARGS=--model-mutations plants the scale model's instead (bench/scale: each limit dropped)
# and checks each changes the make scale goal it names.
mutants: $(STAMP)
	nice -n 10 $(BIN)/python -m tests.mutants $(MUTANTS_ARGS)

# The Lambda requirements take their versions from constraints.txt (infra/pins.py); a test checks it.
pins: $(STAMP)
	$(BIN)/python -m infra.pins

unit: $(STAMP)
	$(BIN)/python -m pytest tests/unit -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

chaos: $(STAMP)
	SUNDIAL_CHAOS_JOBS=10000 $(BIN)/python -m pytest tests/chaos -q -s -p no:logging
	SUNDIAL_MODEL_EXAMPLES=400 SUNDIAL_MODEL_STEPS=50 $(BIN)/python -m pytest tests/model -q -s -p no:logging -o timeout=0

# PART=<name> runs one part of it, its figures alone re-measured (`python -m bench --list` names them).
bench: $(STAMP)
	$(BIN)/python -m bench $(if $(PART),--part $(PART))

# Sundial's own engine on a model of AWS on a virtual clock (bench/scale): the issue's goal
# scenarios, each figure printed beside its goal. A benchmark, not a test; niced.
scale: $(STAMP)
	nice -n 10 $(BIN)/python -m bench.scale.cpu --check
	nice -n 10 $(BIN)/python -m bench.scale.goals $(SCALE_ARGS)

# Measures what each kind of the engine's stretches of code costs on this machine, into the table
# `make scale` charges from (bench/scale/cpu_table.json), so that a seed repeats exactly anywhere.
scale-calibrate: $(STAMP)
	nice -n 10 $(BIN)/python -m bench.scale.cpu

synth: $(STAMP) $(NODE_STAMP)
	$(BIN)/python infra/app.py

# Context and other CLI options go through CDK_ARGS, e.g. CDK_ARGS="-c sundial:alarmEmail=ops@example.com".
# At a terminal the CLI asks before a change that widens access (cdk.json); without one (CI) nobody
# could answer, and it would stop, so it does not ask. `make diff` shows the changes first.
REQUIRE_APPROVAL ?= $(shell [ -t 0 ] && echo broadening || echo never)
deploy: $(STAMP) $(NODE_STAMP)
	npx --no-install cdk deploy --app "$(BIN)/python infra/app.py" --require-approval $(REQUIRE_APPROVAL) $(CDK_ARGS)

diff: $(STAMP) $(NODE_STAMP)
	npx --no-install cdk diff --app "$(BIN)/python infra/app.py" $(CDK_ARGS)

# Checks a running Sundial end to end and cleans up: API=<execute-api URL with its stage> (signed with
# your AWS credentials; STACK=Sundial-<stage> for a stage), or API=<local URL> ENDPOINT=<its emulator>.
smoke: $(STAMP)
	$(if $(API),,$(error give the API's base URL: make smoke API=https://<id>.execute-api.<region>.amazonaws.com/v1))
	$(BIN)/sundial smoke --api $(API) $(if $(STACK),--stack $(STACK)) $(if $(ENDPOINT),--endpoint-url $(ENDPOINT))

clean:
	rm -rf $(VENV) node_modules cdk.out .pytest_cache .mypy_cache .ruff_cache
