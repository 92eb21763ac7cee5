# The user interface of this repository. On a fresh Debian 12 machine:
#   make run    install the build packages that are missing, build the programs, and show the
#               scaler waking a simulated vLLM fleet from zero, sizing it and returning it to zero
#               (SCENARIO=sim/scenarios/NAME.json: the GPU-utilisation demo on that node)
#   make test   install the build and test packages that are missing, build release -Werror,
#               ASan+UBSan and libFuzzer builds, run every test and a fuzz smoke (3 s per target)
# Also: make build, make build-tests, make install [PREFIX=/usr/local] [DESTDIR=], make bench,
# make fuzz [FUZZ_SECONDS=N], make fuzz-campaign [FUZZ_CPU_SECONDS=N], make dist, make format,
# make clean, and more; make help lists every target (tests/integration/test_docs.py checks it).

MAKEFLAGS += --no-print-directory

JOBS ?= $(shell nproc 2>/dev/null || echo 2)
RELEASE_DIR := build/release
ASAN_DIR := build/asan
FUZZ_DIR := build/fuzz
SCENARIO ?= sim/scenarios/inference-burst.json
INTERVAL ?= 1s
FUZZ_SECONDS ?= 60
FUZZ_CPU_SECONDS ?= 600

.PHONY: all deps test-deps js-deps build build-tests build-asan build-fuzz run table test bench fuzz \
	fuzz-campaign format format-check dist clean install help

# What `make build` (and so `make run`, `make install`, `make dist`) builds:
# the two programs, the NVML stand-in and make run's fleet simulator
# (tools/llm-fleet-sim), nothing of the test tree.
PROGRAMS := keda-gpu-scaler gpu-metrics nvml-sim llm-fleet-sim

PREFIX ?= /usr/local

all: build

help:
	@echo "make           the same as make build (make all)"
	@echo "make run       install what is missing, build, and watch the scaler wake a simulated vLLM"
	@echo "               fleet from zero, size it and return it to zero (SCENARIO=sim/scenarios/NAME.json:"
	@echo "               the GPU-utilisation demo on that node instead; the ports are KGS_DEMO_PORT=6000,"
	@echo "               KGS_DEMO_PROBE_PORT=8081, KGS_DEMO_METRICS_PORT=9090, KGS_DEMO_ENGINE_PORT=8100,"
	@echo "               KGS_DEMO_GATEWAY_PORT=9400)"
	@echo "make test      install what is missing, build (release -Werror, ASan+UBSan, libFuzzer),"
	@echo "               run every test and a fuzz smoke"
	@echo "make build     build keda-gpu-scaler, gpu-metrics, the NVML stand-in and the fleet simulator"
	@echo "               ($(RELEASE_DIR)); installs only the build packages (scripts/install-deps)"
	@echo "make build-tests  also every test program and tools/scalesim (installs the test packages"
	@echo "               too): build/release/tools/scalesim/scalesim, the tests under build/release/tests"
	@echo "make build-asan   the same with ASan+UBSan, in $(ASAN_DIR)"
	@echo "make build-fuzz   the libFuzzer build of every fuzz target (clang), in $(FUZZ_DIR)"
	@echo "make deps      install the build packages that are missing (scripts/install-deps)"
	@echo "make test-deps    also the test packages (scripts/install-deps test)"
	@echo "make js-deps   also grpc-js for the integration tests (npm ci, tests/integration/js)"
	@echo "make install   install keda-gpu-scaler and gpu-metrics in PREFIX/bin, the NVML stand-in in"
	@echo "               PREFIX/lib/keda-gpu-scaler, its scenarios in PREFIX/share/keda-gpu-scaler"
	@echo "               (PREFIX=$(PREFIX); DESTDIR=DIR stages the tree under DIR)"
	@echo "make table     gpu-metrics on the simulated node (INTERVAL=$(INTERVAL))"
	@echo "make bench     the benchmarks (bench/README.md)"
	@echo "make fuzz      every fuzz target for FUZZ_SECONDS=$(FUZZ_SECONDS) s"
	@echo "make fuzz-campaign  every fuzz target until it used FUZZ_CPU_SECONDS=$(FUZZ_CPU_SECONDS) s"
	@echo "               of CPU (nice 19; docs/operations.md, \"Fuzzing\")"
	@echo "make dist      the container image's runtime file set, without Docker"
	@echo "make format    clang-format the sources"
	@echo "make format-check  exit 1 when a source is not as clang-format writes it (changes nothing)"
	@echo "make clean     remove build/"
	@echo "make help      this list"

install: build
	DESTDIR="$(DESTDIR)" cmake --install $(RELEASE_DIR) --prefix "$(PREFIX)"

deps:
	@scripts/install-deps

test-deps:
	@scripts/install-deps test

$(RELEASE_DIR)/CMakeCache.txt:
	cmake -S . -B $(RELEASE_DIR) -DCMAKE_BUILD_TYPE=Release -DKGS_WERROR=ON >/dev/null

$(ASAN_DIR)/CMakeCache.txt:
	cmake -S . -B $(ASAN_DIR) -DCMAKE_BUILD_TYPE=Debug -DKGS_SANITIZE=ON -DKGS_WERROR=ON >/dev/null

build: deps $(RELEASE_DIR)/CMakeCache.txt
	cmake --build $(RELEASE_DIR) -j $(JOBS) --target $(PROGRAMS)

# The whole tree with its tests. A tree first configured without the test
# packages (make run on a fresh machine) is configured again once they are in.
build-tests: test-deps $(RELEASE_DIR)/CMakeCache.txt
	@grep -q '^CMOCKA_FOUND:INTERNAL=1' $(RELEASE_DIR)/CMakeCache.txt || cmake $(RELEASE_DIR) >/dev/null
	cmake --build $(RELEASE_DIR) -j $(JOBS)

build-asan: test-deps $(ASAN_DIR)/CMakeCache.txt
	@grep -q '^CMOCKA_FOUND:INTERNAL=1' $(ASAN_DIR)/CMakeCache.txt || cmake $(ASAN_DIR) >/dev/null
	cmake --build $(ASAN_DIR) -j $(JOBS)

# The LLM story: the scaler, a simulated vLLM fleet behind a gateway queue
# and KEDA + the HPA (tools/llm-fleet-sim) on a simulated 8x H100 node; with
# SCENARIO given (command line or environment), the GPU-utilisation demo on
# that node. Ctrl-C to stop. `make table` shows a node with gpu-metrics.
run: build
	@scripts/run-demo $(RELEASE_DIR) $(if $(filter file,$(origin SCENARIO)),,$(SCENARIO))

table: build
	NVML_SIM_SCENARIO=$(CURDIR)/$(SCENARIO) \
	  $(RELEASE_DIR)/src/cli/gpu-metrics --nvml-library $(RELEASE_DIR)/sim/libnvml-sim.so \
	  --interval $(INTERVAL)

# grpc-js for the integration tests, from the lock file (npm registry).
JS_DIR := tests/integration/js
$(JS_DIR)/node_modules/.package-lock.json: $(JS_DIR)/package-lock.json
	npm ci --prefix $(JS_DIR) --no-audit --no-fund --loglevel=error

js-deps: test-deps $(JS_DIR)/node_modules/.package-lock.json

# libFuzzer builds of every fuzz target (clang), for `make test`'s smoke runs
# (KGS_FUZZ_SMOKE_SECONDS each, the fuzz label only) and `make fuzz`.
build-fuzz: test-deps
	@scripts/install-deps test fuzz
	@[ -f $(FUZZ_DIR)/CMakeCache.txt ] || CC=clang-14 cmake -S . -B $(FUZZ_DIR) \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKGS_FUZZ=ON >/dev/null
	cmake --build $(FUZZ_DIR) -j $(JOBS) --target fuzz_all

test: build-tests build-asan build-fuzz js-deps
	@scripts/run-tests $(RELEASE_DIR) $(ASAN_DIR) $(FUZZ_DIR):fuzz

bench: build-tests
	@bench/run-all $(RELEASE_DIR)

fuzz: build-fuzz
	@scripts/run-fuzz $(FUZZ_DIR) $(FUZZ_SECONDS)

fuzz-campaign: build-fuzz
	@nice -n 19 scripts/fuzz-campaign $(FUZZ_DIR) $(FUZZ_CPU_SECONDS)

# The container image's runtime file set, without Docker: build/dist/rootfs
# holds what the Dockerfile's final stage copies in, and
# build/dist/runtime-packages.txt the Debian packages (beyond debian:12-slim)
# its shared libraries come from. Fails if the Dockerfile's list disagrees.
dist: build
	python3 tests/deploy/dist/closure.py stage --build $(RELEASE_DIR) --source . \
	  --out build/dist --dockerfile Dockerfile

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

format-check:
	clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build
