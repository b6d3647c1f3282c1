# `make run`: install what is missing, build Release, run the embedded default cluster.
# `make test`: the same set-up, then every test through ctest.
# `make fuzz`: libFuzzer campaigns over every decoder of outside bytes (scripts/fuzz.sh; RUNS per decoder).
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all deps configure build run test sanitize tsan fuzz clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null

build: configure
	@cmake --build $(BUILD) -j$(JOBS)

run: build
	$(BUILD)/apps/dualpath run

test: build
	ctest --test-dir $(BUILD) --output-on-failure

# Long campaigns, not part of `make test` (docs/design.md §16).
sanitize: deps
	scripts/sanitize.sh asan

tsan: deps
	scripts/sanitize.sh tsan

RUNS ?= 1000000
fuzz: deps
	@scripts/fuzz.sh $(RUNS)

clean:
	rm -rf $(BUILD)
