# The commands a newcomer needs. Each target installs what is missing into .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# A local CPU build of torch is installed first; an unpinned torch would pull GBs of CUDA packages.
TORCH_SPEC ?= torch==2.13.0

.PHONY: install demo test docs bench report lint zoo clean

install: $(VENV)/.installed

# uv installs (and byte-compiles, which Ray's worker processes need) on both cores: about half of
# pip's time. The folder of local wheels, where a machine has one, is searched for torch first.
# Where uv cannot be installed or cannot install (a registry only pip is configured for), pip does.
FIND_LINKS := $(if $(wildcard /opt/wheels),--find-links /opt/wheels)
UV_INSTALL := $(BIN)/uv pip install -q --python $(BIN)/python --compile-bytecode

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q uv || echo "uv not installed: installing with pip"
	$(UV_INSTALL) $(FIND_LINKS) "$(TORCH_SPEC)" || $(BIN)/pip install -q "$(TORCH_SPEC)"
	$(UV_INSTALL) -e ".[test]" || $(BIN)/pip install -q -e ".[test]"
	touch $@

demo: install  ## train on sample_graphs/small, transfer to the 250k-node graph, predict there
	$(BIN)/graphtransfer train --task mis --graphs small --force
	$(BIN)/graphtransfer transfer --src small --dst large --force
	$(BIN)/graphtransfer predict --model runs/mis/large --graph large --out runs/mis/large/solution.csv --force

# Test files go to TEST_WORKERS processes, a whole file to one process (module fixtures train once).
TEST_WORKERS ?= 2

test: install lint  ## the lint, then the test suite on TEST_WORKERS processes (what CI runs)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=25

docs: install  ## the documentation site into site/ (mkdocs, strict: a warning fails the build)
	$(BIN)/python -m mkdocs build --strict

bench: install  ## ratios against ../shared/plain-recipe, run as it is (about 65 minutes on 2 cores; not part of test)
	$(BIN)/python -m bench.forward --repeats 5 --threads 1
	$(BIN)/python -m bench.training_recipe
	$(BIN)/python -m bench.training_recipe --model gcn2
	test -f runs/mis/small/config.json || $(BIN)/graphtransfer train --task mis --graphs small
	$(BIN)/python -m bench.predict_scale --model runs/mis/small
	$(BIN)/python -m bench.node_order --model runs/mis/small

report: install  ## render bench/report.json into the tables of README.md, docs/quality.md and docs/performance.md ('python -m bench.report run' measures anew: about 9 minutes on 2 cores)
	$(BIN)/python -m bench.report

zoo: install  ## rebuild the built-in models (graphtransfer/zoo/mis, mvc): 7 training seeds each, the best on validation graphs, MIS then fine-tuned towards a search's sets, with a dense expert (MIS about 22 minutes on 2 cores)
	$(BIN)/python -m bench.build_zoo --task mis --seeds 0,1,2,3,4,5,6
	$(BIN)/python -m bench.build_zoo --task mis --imitate
	$(BIN)/python -m bench.build_zoo --task mvc --seeds 0,1,2,3,4,5,6 --steps 30000

lint: install  ## ruff over the package, tests, bench and examples (relative imports banned); mypy over the package
	$(BIN)/ruff check graphtransfer tests sample_graphs bench examples
	$(BIN)/mypy

clean:
	rm -rf $(VENV) runs .pytest_cache site
