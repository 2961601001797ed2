# Entry points: `make run` and `make test` work on a fresh Debian 12 machine.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: deps build run test bench capture-bundle clean

deps:
	@tools/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/atomsim run

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

bench: build
	tools/bench/speed.sh $(BUILD)/atomsim

# The capture tool with the libraries it needs, for GPU machines without the build's dependencies.
capture-bundle: build
	tools/capture/bundle.sh $(BUILD) $(BUILD)/atomsim-capture.tar.gz

clean:
	rm -rf $(BUILD)
