# One command sets up and runs each job on a fresh machine.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench clean xvfb

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

# Window tests need an X server (Debian's xvfb) and the X libraries Qt's xcb platform loads;
# installed only when missing.
XVFB_PACKAGES := xvfb xauth libxcb-icccm4 libxcb-keysyms1 libxcb-cursor0 libxcb-image0 \
	libxcb-render-util0 libxcb-xkb1 libxcb-shape0 libxcb-randr0 libxkbcommon-x11-0 libxtst6
xvfb:
	@dpkg -s $(XVFB_PACKAGES) >/dev/null 2>&1 || (apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(XVFB_PACKAGES) >/dev/null)

run: $(STAMP)
	$(BIN)/patchbay

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

test: $(STAMP) xvfb lint
	QT_QPA_PLATFORM=offscreen PATCHBAY_REQUIRE_GL=1 $(BIN)/pytest -q

bench: $(STAMP)
	$(BIN)/patchbay bench

clean:
	rm -rf $(VENV) build *.egg-info
