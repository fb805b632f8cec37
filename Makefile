# tiny: common tasks. `make help` lists them.
SHELL := bash
CARGO ?= cargo
# Build outputs live in a per-user cache so that reruns (and CI on the same machine) are fast.
export CARGO_TARGET_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/tiny/target
CRATE ?= tiny-example-hello

.PHONY: help run demo test lint fmt expand crds bench-flow bench-expr fuzz fuzz-smoke ci

help: ## this list
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | column -t -s $$'\t'

run: ## start a local control plane, run the hello module on it, apply a flow and a signal, print the result
	$(CARGO) run -q -p tiny-example-hello --bin cluster-demo

demo: ## run the hello example flow in-process (no cluster) and print its reply
	$(CARGO) run -q -p tiny-example-hello --bin hello-demo

test: ## run every test (what CI runs)
	$(CARGO) test --workspace --locked

lint: ## clippy with -D warnings, and rustfmt check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
	$(CARGO) fmt --all -- --check

fmt: ## format everything
	$(CARGO) fmt --all

expand: ## show the macro expansion of CRATE (default: the hello example), like cargo expand
	RUSTC_BOOTSTRAP=1 $(CARGO) rustc -q -p $(CRATE) --lib -- -Zunpretty=expanded

crds: ## regenerate crds/tiny.yaml from the Rust types
	$(CARGO) run -q -p tiny-runtime --example crdgen > crds/tiny.yaml.tmp && mv crds/tiny.yaml.tmp crds/tiny.yaml

bench-flow: ## flow engine benchmark beside Node-RED, with ratios
	$(CARGO) bench -p tiny-sdk --bench flow -- --peer

bench-expr: ## expression evaluation micro-benchmark
	$(CARGO) run --release -p tiny-expr --example bench

fuzz: ## run every fuzz target FUZZ_SECONDS (default 600) after another, niced (README "Fuzzing")
	tools/fuzz.sh $(FUZZ_TARGETS)

fuzz-smoke: ## every fuzz target for 20 s: the harness builds and runs
	FUZZ_SECONDS=20 tools/fuzz.sh $(FUZZ_TARGETS)

ci: lint test ## what .ci/run does
