# The project's two commands: `make run` and `make test`.
SHELL := /bin/bash
CARGO ?= cargo

.PHONY: run test build test-rust

run: build
	./target/release/switchboard serve

build:
	$(CARGO) build --release

test: test-rust

test-rust:
	$(CARGO) test --workspace
