# kinedyn: `make run` and `make test` are the two set-up commands (see README).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export MPLBACKEND ?= Agg

.PHONY: run test venv bench clean

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	$(BIN)/python -m pip install --quiet -e ".[peers]" || echo "note: the optional peers" \
	  "(MuJoCo, Pinocchio, Exudyn) did not install: kinedyn bench peers and their tests skip them"
	touch $(STAMP)

venv: $(STAMP)

run: $(STAMP)
	$(BIN)/kinedyn info stewart-paper
	$(BIN)/kinedyn simulate gough-stewart --hold P1,P2,P3,P4,P5,P6 --method projection --t-end 2 --dt 1e-3 --record-every 10 --reactions --out results/make-run

test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile --durations=15

bench: $(STAMP)
	$(BIN)/kinedyn bench all --quick

clean:
	rm -rf $(VENV) build *.egg-info
