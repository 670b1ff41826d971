# Convenience wrapper around CMake. `make test` is the command CI runs.
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= 2

.PHONY: all deps test test-fast sanitize run tour bench clean

all: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD) -j$(JOBS)

deps:
	@tools/install-deps.sh

# The whole suite: C tests and every spec, then again under ASan + UBSan.
test: test-fast sanitize

test-fast: all
	cd $(BUILD) && ctest --output-on-failure

sanitize: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DWICK_SANITIZE=ON >/dev/null
	cmake --build $(ASAN_BUILD) -j$(JOBS)
	cd $(ASAN_BUILD) && ctest --output-on-failure

# The main job: train the Fashion-MNIST MLP (ARGS="--model cnn" for the CNN).
run: all
	$(BUILD)/wick examples/fashion_mnist.lua $(ARGS)

tour: all
	$(BUILD)/wick examples/tensors.lua

bench: all
	@tools/install-deps.sh --bench
	bench/run.sh

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
