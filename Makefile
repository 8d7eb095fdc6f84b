# Two commands on a fresh machine: `make install`, then `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# setuptools' note on every editable install ("Editable installation. Please be careful with
# folders ... with the same name as your package"), which pip shows as a warning: only that one
# is silenced (by its first words); every other warning and every error still shows.
QUIET_NOTES := ignore:Editable installation:UserWarning

.PHONY: install test bench clean

install: $(BIN)/dsstar

$(BIN)/dsstar: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	PYTHONWARNINGS='$(QUIET_NOTES)' $(BIN)/pip install --quiet -e '.[dev]'
	@touch $@
	@echo "installed: $$($(BIN)/dsstar --version)  (activate with: source $(VENV)/bin/activate)"

test: install
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup

bench: install
	@for b in benchmarks/*_bench.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
