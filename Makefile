# s3q — the one test command is `make test`; `make dev` runs the queue locally.
GO        ?= go
BIN       := $(CURDIR)/.bin
VERSITYGW := $(BIN)/versitygw
export S3Q_VERSITYGW := $(VERSITYGW)

.PHONY: test test-go test-python test-typescript gen-typescript fuzz test-short bench vet fmt dev versitygw chromium clean openapi-lint check-tracked

## test: the one test command: vet, gofmt, every Go test with -race (mem store,
## gofakes3, versitygw; the conformance suites' versitygw runs without it, see test-go; among them the README's walk-through, scripts/readme,
## and the console in headless Chromium), a short fuzz of the HTTP API, the
## OpenAPI lint, the CDK template tests, every function's zip under the Lambda
## emulator, the Python client (test-python), the TypeScript client (test-typescript),
## and no build output tracked by git
test: check-tracked test-go test-python test-typescript fuzz openapi-lint infra-test rie-test

## check-tracked: fail when git tracks a file over 1 MiB or a binary (an executable that is no #! script)
check-tracked:
	@bash scripts/check-tracked

## test-go: every Go test. The conformance suites' versitygw runs (TestConformanceVersityGW of
## the packages in VGW_PKGS) go without the race detector, at the same time as the -race pass
## of everything else: the same core code runs under -race on the mem store and gofakes3, and
## versitygw's run is mostly the server's time, which -race only slows. Their output follows
## the -race pass's. Measured on the shared 2-core machine (queue suite, CPU seconds): versitygw
## 243 under -race on disk -> 104 without it on tmpfs; mem+gofakes3 under -race 551 -> 252 with
## a bucket per store on gofakes3 (s3localtest.NewStore).
VGW_PKGS = $(sort $(dir $(shell git grep -l '^func TestConformanceVersityGW[^A-Za-z0-9_]' -- '*_test.go')))
test-go: versitygw chromium vet
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^infra/')); if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	@mkdir -p $(BIN); log=$(BIN)/test-versitygw.log; \
	  $(GO) test -count=1 -timeout 20m -run '^TestConformanceVersityGW$$' $(addprefix ./,$(VGW_PKGS)) >$$log 2>&1 & vgw=$$!; \
	  echo "$(GO) test -race -count=1 -timeout 20m -skip '^TestConformanceVersityGW$$' ./..."; \
	  $(GO) test -race -count=1 -timeout 20m -skip '^TestConformanceVersityGW$$' ./...; race=$$?; \
	  wait $$vgw; rc=$$?; echo "$(GO) test -count=1 -run '^TestConformanceVersityGW$$' $(VGW_PKGS) (without -race):"; cat $$log; \
	  [ $$race -eq 0 ] && [ $$rc -eq 0 ]

## test-python: the Python client (clients/python) in its venv .bin/pyenv (the exact
## versions of clients/python/requirements-dev.txt, scripts/install-pyenv): ruff, mypy
## --strict, the models' drift check against shared/api/openapi.json, and pytest against a
## fresh s3q dev: every scenario of contract/scenarios.json, every signature vector, a live
## push delivery, the worker under SIGTERM, the README's Python snippets
PYENV := $(BIN)/pyenv
test-python:
	@bash scripts/install-pyenv >/dev/null
	$(GO) build -o $(BIN)/s3q ./cmd/s3q
	cd clients/python && $(PYENV)/bin/ruff check s3q scripts tests ../../examples/python && $(PYENV)/bin/mypy
	cd clients/python && S3Q_BIN=$(BIN)/s3q $(PYENV)/bin/python -m pytest -q -p no:cacheprovider

## test-typescript: the TypeScript client (clients/typescript): npm ci of its pinned
## packages, its generated types against shared/api/openapi.json (drift), tsc --strict
## over the package, its examples and the README's TypeScript blocks, no `any` in its
## public surface, and its node:test suite against fresh s3q dev servers
test-typescript:
	$(GO) build -o $(BIN)/s3q ./cmd/s3q
	S3Q_BIN=$(BIN)/s3q bash scripts/test-typescript

## gen-typescript: regenerate the TypeScript client's types (clients/typescript/src/openapi.ts)
## from shared/api/openapi.json; needed after every change of the document (test-typescript
## fails until the committed types match it)
gen-typescript:
	cd clients/typescript && { [ -d node_modules ] || npm ci --no-audit --no-fund --loglevel=error; } && npm run --silent gen

## fuzz: feed the HTTP API random requests for a while (FUZZTIME, default 10s). Without
## minimization (-fuzzminimizetime 0s): the API's coverage differs a little from run to run, so
## a fresh cache sends every seed back to be minimized, 60 s each by default, and a 10 s run
## then spends all its time there ("execs: 67 (0/sec)"); without it the same 10 s run 1,500
## inputs. A failing input is still saved in testdata/fuzz as it was found
FUZZTIME ?= 10s
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzAPI -fuzztime $(FUZZTIME) -fuzzminimizetime 0s ./shared/api

## openapi-lint: shared/api/openapi.json under Redocly's recommended rules
## (@redocly/cli pinned in scripts/redocly, installed there by npm ci)
openapi-lint:
	@bash scripts/lint-openapi

## test-short: the in-memory store's conformance runs only, no race detector, no S3 server needed
test-short:
	$(GO) test -count=1 ./shared/queue/ ./shared/store/...
	$(GO) test -count=1 -run Mem ./shared/queue/queuetest/ ./shared/schedule/scheduletest/

## bench: request counts and dollars per task lifecycle, throughput on versitygw,
## sweep and tick cost against the backlog, the audit of a run per S3 fault mix,
## the S3 requests of each console view on 10k tasks, and API latency, S3 round trips,
## worker pickup and throughput through the dev server with S3 near (latency=none)
## and at AWS-like latency (latency=typical; docs/performance.md), the Go and Python
## clients' submit latency and worker throughput the same way (scripts/clientbench), and
## the TypeScript client's (scripts/bench-typescript, docs/clients.md)
bench: versitygw
	$(GO) run ./scripts/bench
	$(GO) run ./scripts/latency
	$(GO) run ./scripts/consolebench
	@bash scripts/install-pyenv >/dev/null
	$(GO) run ./scripts/clientbench
	bash scripts/bench-typescript

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

## versitygw: install the real S3 gateway the tests run against (pinned, into .bin/; idempotent)
versitygw:
	@bash scripts/install-versitygw >/dev/null

## chromium: install the browser the console's tests drive (Debian package chromium; idempotent)
chromium:
	@bash scripts/install-chromium >/dev/null

## dev: the whole queue locally: in-process S3, the HTTP API on 127.0.0.1:8080, sweep and tick on a timer
## (DEV_FLAGS="--tick 5s --data-dir .s3q" for more). Built into .bin/ and exec'd,
## not `go run`, so that Ctrl-C ends it cleanly (go run exits 1 on an interrupt,
## and make then reports an error).
DEV_FLAGS ?=
dev:
	$(GO) build -o $(BIN)/s3q ./cmd/s3q && exec $(BIN)/s3q dev $(DEV_FLAGS)

clean:
	rm -rf .bin dist cdk.out

# --- deploy (infra/) ---
# The CDK app lives in infra/ (its own Go module, so `go test ./...` above
# never compiles the CDK bindings). The CDK CLI is pinned in
# infra/_cdkcli/package-lock.json and installed there by `npm ci`.
ENV       ?= dev
CDK_CLI   := infra/_cdkcli/node_modules/.bin
CDK       := cd infra && JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 bash ../scripts/cdk-quiet _cdkcli/node_modules/.bin/cdk
CDK_FLAGS ?=

.PHONY: build synth diff deploy destroy cdk-bootstrap localstack-deploy infra-test rie-test coldstart cdk-cli

## build: cross-compile every functions/<name> for Lambda (provided.al2023, arm64) into dist/<name>.zip
build:
	@bash scripts/build-functions

cdk-cli: $(CDK_CLI)/cdk
$(CDK_CLI)/cdk: infra/_cdkcli/package-lock.json
	cd infra/_cdkcli && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

## synth: the CloudFormation template of s3q-$(ENV) into cdk.out/ (cdk-nag runs too). The CDK CLI
## runs through scripts/cdk-quiet, which drops jsii-runtime-go's benign "waitid: no child
## processes" line and keeps the CLI's exit status: a failed synth fails make
synth: build cdk-cli
	$(CDK) synth --quiet -c env=$(ENV) $(CDK_FLAGS)

## diff: what `make deploy ENV=x` would change in the account
diff: build cdk-cli
	$(CDK) diff -c env=$(ENV) $(CDK_FLAGS) s3q-$(ENV)

## deploy: deploy stack s3q-$(ENV) with the credentials of the environment (AWS_PROFILE, ...)
deploy: build cdk-cli
	$(CDK) deploy -c env=$(ENV) --require-approval $(or $(APPROVAL),broadening) $(CDK_FLAGS) s3q-$(ENV)

## destroy: delete stack s3q-$(ENV) (asks first; FORCE=1 does not). With retainData (prod by default)
## the bucket and the log groups stay, with their data; otherwise they are emptied and deleted
destroy: build cdk-cli
	@echo "make destroy: deleting stack s3q-$(ENV); its bucket is kept only if retainData is true for $(ENV) (prod by default) - see docs/deploy.md"
	$(CDK) destroy -c env=$(ENV) $(if $(FORCE),--force) $(CDK_FLAGS) s3q-$(ENV)

## cdk-bootstrap: once per account and region, before the first deploy
cdk-bootstrap: cdk-cli
	$(CDK) bootstrap -c env=$(ENV) $(CDK_FLAGS)

## localstack-deploy: deploy s3q-$(ENV) to LocalStack with cdklocal and run scripts/e2e against it
localstack-deploy: cdk-cli
	ENV=$(ENV) bash localstack/deploy

## infra-test: vet, gofmt and the template tests of infra/ (assertions + cdk-nag); they leave
## the synthesized templates in .bin/templates/ for rie-test
TEMPLATES := $(BIN)/templates
infra-test:
	@unformatted=$$(cd infra && gofmt -l $$(find . -name '*.go' -not -path './_cdkcli/*')); if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	cd infra && $(GO) vet ./...
	cd infra && S3Q_TEMPLATE_DIR=$(TEMPLATES) JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 $(GO) test -count=1 ./...

## rie-test: every function's zip (built as `make build` does, arm64, and for amd64) run under the
## Lambda Runtime Interface Emulator with the dev template's environment and versitygw: every event
## of events/ on amd64, one per function on arm64 under qemu; prints cold start and warm duration
RIE_DIST := $(BIN)/rie
rie-test: versitygw infra-test
	@bash scripts/install-rie >/dev/null
	@bash scripts/install-qemu >/dev/null
	@GOARCH=arm64 DIST=$(RIE_DIST)/arm64 bash scripts/build-functions >/dev/null
	@GOARCH=amd64 DIST=$(RIE_DIST)/amd64 bash scripts/build-functions >/dev/null
	$(GO) vet -tags rie ./scripts/rietest
	S3Q_RIE=$(BIN)/aws-lambda-rie S3Q_QEMU=$$(bash scripts/install-qemu) \
	  S3Q_RIE_TEMPLATE=$(TEMPLATES)/s3q-dev.template.json \
	  S3Q_RIE_ZIPS_AMD64=$(RIE_DIST)/amd64 S3Q_RIE_ZIPS_ARM64=$(RIE_DIST)/arm64 S3Q_RIE_REPORT=$(RIE_DIST)/timings.txt \
	  $(GO) test -tags rie -count=1 -timeout 10m ./scripts/rietest
	@cat $(RIE_DIST)/timings.txt

## coldstart: each function's time to ready and first event, on this machine
coldstart:
	$(GO) run ./scripts/coldstart
# --- end deploy ---
