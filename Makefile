# Convenience wrapper around CMake. `make test` is the command CI runs.
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
FUZZ_BUILD ?= build-fuzz
JOBS ?= 2
# seconds per fuzz target: `make fuzz` (CI) and `make fuzz-long`
FUZZ_SHORT_SECONDS ?= 20
FUZZ_SECONDS ?= 600

.PHONY: all deps test test-fast sanitize tsan fuzz fuzz-long fuzz-build run gpt tour bench clean

all: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD) -j$(JOBS)

deps:
	@tools/install-deps.sh

# The whole suite: C tests and every spec, then again under ASan + UBSan, then
# the tests of states on several threads under ThreadSanitizer, then a short
# run of each wick.load fuzz target.
test: test-fast sanitize tsan fuzz

test-fast: all
	cd $(BUILD) && ctest --output-on-failure

sanitize: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DWICK_SANITIZE=ON >/dev/null
	cmake --build $(ASAN_BUILD) -j$(JOBS)
	cd $(ASAN_BUILD) && ctest --output-on-failure

# ThreadSanitizer (WICK_TSAN): only what the embed, interrupt and thread-pool
# tests need is built (the runner makes the test's checkpoint); four states on
# four threads with the thread count, seed, log and allocator changed under
# them, interrupts aimed at one of two states, and the pool's split products and
# claimed parts (spec/threads_spec.lua). About a minute on 2 cores.
tsan: deps
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWICK_TSAN=ON -DWICK_CUDA=OFF -DWICK_LUA54=OFF >/dev/null
	cmake --build $(TSAN_BUILD) -j$(JOBS) --target wick_runner wick_embed_host test_interrupt
	cd $(TSAN_BUILD) && ctest --output-on-failure -R '^(embed|c_interrupt|threads_spec)$$'

# libFuzzer targets for wick.load (fuzz/README.md), in a clang build of their own.
fuzz-build: deps
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DWICK_FUZZ=ON -DWICK_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(FUZZ_BUILD) -j$(JOBS) --target fuzz_targets

# Each target FUZZ_SHORT_SECONDS (20 s); fails if one finds something.
fuzz: fuzz-build
	fuzz/run.sh $(FUZZ_SHORT_SECONDS) $(FUZZ_BUILD)

# Each target FUZZ_SECONDS (600 s); logs in $(FUZZ_BUILD)/logs/.
fuzz-long: fuzz-build
	fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_BUILD)

# The main job: train the Fashion-MNIST MLP (ARGS="--model cnn" for the CNN).
# ARGS="--model gpt ..." runs the second main job, `make gpt`, with the other ARGS.
run: all
	@case " $(ARGS) " in \
	  *" --model gpt "*|*" --model=gpt "*) $(BUILD)/wick examples/gpt.lua $(filter-out --model=gpt,$(subst --model gpt,,$(ARGS))) ;; \
	  *) $(BUILD)/wick examples/fashion_mnist.lua $(ARGS) ;; \
	esac

# The second main job: a character-level GPT (nanoGPT's model and CPU config) on
# /usr/share/common-licenses or the text file in ARGS (ARGS="--max-iters 20" is short).
gpt: all
	$(BUILD)/wick examples/gpt.lua $(ARGS)

tour: all
	$(BUILD)/wick examples/tensors.lua

bench: all
	@tools/install-deps.sh --bench
	bench/run.sh

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD)
