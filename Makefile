# Thin wrapper: set-up, build, demo and tests. The build itself is CMake (CMakeLists.txt).
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# ctest runs at least 4 tests at once: the suite waits on conditions, not on the machine's
# speed, so a busy machine must not fail it (CI runs it so on 2 cores)
CTEST_JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -lt 4 ] && n=4; echo $$n)

.PHONY: all deps build docs demo test lint format asan fuzz fuzz-smoke fuzz-run check-runs check-lessons bench bench-scale bench-check bench-gpu clean

all: build

deps:
	@sh .ci/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# The tables dtsim prints from its registries, written into the READMEs: the key reference
# (scenarios/keys.md) and the strategy table (sim/README.md); the cli suite checks them.
docs: build
	@sh sim/cli/docs.sh $(BUILD)

# The strategy comparison: 15 runs into results/dtsim.db, figures into results/plots/, and
# the page about them all, results/report.html.
demo: build
	./$(BUILD)/dtsim run scenarios/demo.ini -j $(JOBS)
	./$(BUILD)/dtsim plot
	@page=$$(./$(BUILD)/dtsim report) && echo "demo: the report is $$page (open it in a browser)"

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(CTEST_JOBS)
	@$(MAKE) --no-print-directory lint
	@$(MAKE) --no-print-directory fuzz-smoke

# The house style (.clang-format): `make lint` fails on a source clang-format would change
# and names it; `make format` rewrites them all.
SOURCES = $$(git ls-files '*.c' '*.h' '*.cc' '*.cu' 2>/dev/null)
lint: deps
	@if ! command -v clang-format >/dev/null 2>&1; then \
	  echo "lint: skipped (clang-format is not installed: make deps installs it)"; \
	elif ! git rev-parse --git-dir >/dev/null 2>&1; then echo "lint: skipped (not a git checkout: no list of sources)"; \
	else clang-format --dry-run --Werror $(SOURCES) && echo "lint: every source as .clang-format says"; fi

format: deps
	clang-format -i $(SOURCES)

# libFuzzer on the IDX reader, the scenario parser, the profile loader and the platform check
# (clang, warnings as errors; dtsim itself is built there too, so every product source
# compiles under clang -Werror): 20 s each
# with `make test`, FUZZ_SECONDS each with `make fuzz`. Crashing inputs land in build-fuzz/
# as fuzz-crash-*; copy them to tests/fuzz/regressions/NAME/ so every build replays them.
FUZZ_SECONDS ?= 600
fuzz-smoke: deps
	@if command -v clang >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory fuzz FUZZ_SECONDS=20; \
	else echo "fuzz: skipped (clang is not installed: make deps installs it)"; fi

fuzz: deps
	@cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug -DDTSIM_FUZZ=ON -DDTSIM_CUDA=OFF -DDTSIM_WERROR=ON \
	  -DDTSIM_FUZZ_SECONDS=$(FUZZ_SECONDS) >/dev/null
	@cmake --build build-fuzz -j $(JOBS) --target dtsim fuzz_idx fuzz_profile fuzz_scenario fuzz_platform fuzz_device
	cd build-fuzz && ctest --output-on-failure -j $(JOBS) -R '^fuzz_(idx|profile|scenario|platform|device)$$'
	@$(MAKE) --no-print-directory fuzz-run FUZZ_SECONDS=$(FUZZ_SECONDS)

# The run fuzzer: mutated scenarios run for two steps each, FUZZ_SECONDS of them from a
# fresh seed; findings land in build/run-fuzz-long/finding-* (copy one to
# tests/fuzz/regressions/run/ once fixed). An input may take up to 120 s before it counts as
# a hang: a legal run can take most of a minute (100 million synthetic samples took 54 s here).
fuzz-run: build
	./$(BUILD)/run_fuzz ./$(BUILD)/dtsim $(BUILD)/run-fuzz-long 120 fuzz $$(date +%s) -$(FUZZ_SECONDS) tests/fuzz/corpus/run/*

# What check accepts, run starts: every shipped scenario checked on each device (cuda where a
# GPU is present) and, where accepted, its first run run for 2 steps (tests/check_runs.sh);
# about 15 minutes on 2 cores, so not part of `make test`.
check-runs: build
	sh tests/check_runs.sh $(BUILD)

# Every lesson run and every number its text states checked against the runs
# (scenarios/lessons/README.md); about 4 minutes on 2 cores, so `make test` runs the bandwidth
# lesson alone.
check-lessons: build
	cd $(BUILD) && DTSIM_SLOW=1 ctest --output-on-failure -R '^lessons_slow$$'


# The whole suite under AddressSanitizer and UndefinedBehaviorSanitizer.
asan: deps
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DDTSIM_SANITIZE=ON >/dev/null
	@cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS)

# Trainer speed and accuracy on this machine (figures, not pass/fail).
bench: build
	sh tests/bench/trainer.sh $(BUILD)

# Timing-only runs of 1024 and 4096 workers and of 100,000 clients: wall time and memory.
bench-scale: build
	sh tests/bench/scale.sh $(BUILD)

# dtsim against Horovod's published 512-GPU efficiencies, SimGrid's SMPI, and published
# large-scale runs (GPT-3 175B and a 1T GPT on up to 3072 A100s, Llama 3 405B on 8,192 and
# 16,384 H100s), each simulated whole (about 20 minutes on 2 shared cores;
# tests/bench/megatron.sh, GPT-3 175B reduced plus dtsim plan's layouts, runs on its own).
bench-check: build
	sh tests/bench/horovod.sh $(BUILD)
	sh tests/bench/smpi.sh $(BUILD)
	sh tests/bench/published.sh $(BUILD)

# CPU vs GPU training speed, FP32 peak fraction, fedavg rounds side by side (needs a GPU).
bench-gpu: build
	sh tests/bench/gpu.sh $(BUILD)

clean:
	rm -rf $(BUILD) build-asan build-fuzz
