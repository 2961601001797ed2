# Entry points: `make run` and `make test` work on a fresh Debian 12 machine.
BUILD ?= build
SANITIZE_BUILD ?= build-sanitize
TSAN_BUILD ?= build-tsan
FUZZ_BUILD ?= build-fuzz
FUZZ_TARGETS := trace_file gpu_config join_input sweep_spec accelsim_trace accelsim_xz
FUZZ_SECONDS ?= 1800
FUZZ_RUNS ?= 2000
JOBS ?= $(shell nproc)

.PHONY: deps build run test test-sanitize test-threads fuzz fuzz-smoke fuzz-long bench capture-bundle clean

deps:
	@tools/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/atomsim run

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The whole suite again, built with AddressSanitizer and UndefinedBehaviorSanitizer
# (any report fails its test; tests/sanitizers.supp says which leaks are by design).
test-sanitize: deps
	@cmake -S . -B $(SANITIZE_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATOMSIM_SANITIZE=ON >/dev/null
	@cmake --build $(SANITIZE_BUILD) -j $(JOBS)
	cd $(SANITIZE_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitizers.supp:print_suppressions=0 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j $(JOBS) --timeout 1200

# The tests that run work on several threads (the engine's windows and their
# shared domains, the warp prefetcher, host profiling, the warp join), built
# with ThreadSanitizer: any report fails.
THREAD_TESTS := [threads],[prefetch],[host-profile],[engine],[join]
test-threads: deps
	@cmake -S . -B $(TSAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATOMSIM_TSAN=ON >/dev/null
	@cmake --build $(TSAN_BUILD) -j $(JOBS) --target atomsim_tests
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 $(TSAN_BUILD)/tests/atomsim_tests "$(THREAD_TESTS)"

# libFuzzer targets (clang) for traces, configurations, join inputs and sweep specs (docs/reliability.md).
fuzz: deps
	@CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATOMSIM_FUZZ=ON >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS)

# Each target for a fixed number of executions from the committed corpus (CI).
fuzz-smoke: fuzz
	@for t in $(FUZZ_TARGETS); do log=$(FUZZ_BUILD)/fuzz-work/$$t-smoke.log; mkdir -p $(FUZZ_BUILD)/fuzz-work; \
	  tests/fuzz/run.sh $(FUZZ_BUILD) $$t --runs $(FUZZ_RUNS) >$$log 2>&1 || { tail -40 $$log; exit 1; }; \
	  echo "$$t: $$(grep -E '^Done' $$log)"; done

# Each target for FUZZ_SECONDS; the grown corpus, minimised, replaces the committed one.
fuzz-long: fuzz
	@for t in $(FUZZ_TARGETS); do tests/fuzz/run.sh $(FUZZ_BUILD) $$t $(FUZZ_SECONDS); done

bench: build
	tools/bench/speed.sh $(BUILD)/atomsim

# The capture tool with the libraries it needs, for GPU machines without the build's dependencies.
capture-bundle: build
	tools/capture/bundle.sh $(BUILD) $(BUILD)/atomsim-capture.tar.gz

clean:
	rm -rf $(BUILD) $(SANITIZE_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD)
