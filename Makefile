# `make run`: install what is missing, build Release, run the embedded default cluster.
# `make test`: the same set-up, then every test through ctest.
# `make fuzz`: libFuzzer campaigns over every decoder of outside bytes (scripts/fuzz.sh; RUNS per decoder).
# `make format-check` / `make format`: the code against .clang-format; `make tidy`: clang-tidy (.clang-tidy).
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all deps configure build run test sanitize tsan fuzz format format-check tidy clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null

build: configure
	@cmake --build $(BUILD) -j$(JOBS)

run: build
	$(BUILD)/apps/dualpath run

# Two entries at a time, except those that start and kill node processes (RUN_SERIAL in tests/cluster).
test: build
	ctest --test-dir $(BUILD) --output-on-failure -j2

# Long campaigns, not part of `make test` (docs/design.md §16).
sanitize: deps
	scripts/sanitize.sh asan

tsan: deps
	scripts/sanitize.sh tsan

RUNS ?= 1000000
fuzz: deps
	@scripts/fuzz.sh $(RUNS)

# Every C++ source the project owns (the vendored-nothing tree: all of it).
SOURCES = $(shell git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh')

format-check: deps
	@clang-format --dry-run -Werror $(SOURCES) && echo "format-check: $(words $(SOURCES)) files formatted"

format: deps
	@clang-format -i $(SOURCES)

# Long (every translation unit through clang-tidy): its own target, not part of `make test`.
tidy: configure
	run-clang-tidy -quiet -p $(BUILD) -j $(JOBS) '$(CURDIR)/(core|storage|transport|gpu|schedule|text|runtime|report|bench|api|protocol|sim|actors|observe|cluster|serve|apps)/[^/]*\.cpp$$'

clean:
	rm -rf $(BUILD)
