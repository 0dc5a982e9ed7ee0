# s3q — the one test command is `make test`; `make dev` runs the queue locally.
GO        ?= go
BIN       := $(CURDIR)/.bin
VERSITYGW := $(BIN)/versitygw
export S3Q_VERSITYGW := $(VERSITYGW)

.PHONY: test test-short bench vet fmt dev versitygw clean

## test: vet, format check, and every test (mem store, gofakes3, versitygw) with the race detector
test: versitygw vet
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	$(GO) test -race -count=1 -timeout 20m ./...

## test-short: the mem-store runs only, no race detector (seconds)
test-short:
	$(GO) test -count=1 ./shared/queue/ ./shared/store/...

## bench: request counts and dollars per task lifecycle, throughput on versitygw
bench: versitygw
	$(GO) run ./scripts/bench

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

## versitygw: install the real S3 gateway the tests run against (pinned, into .bin/; idempotent)
versitygw:
	@bash scripts/install-versitygw >/dev/null

## dev: the whole queue locally (arrives with the HTTP API; see README)
dev:
	@echo "make dev arrives with the HTTP API (issue: the HTTP API, the Lambda functions, the CLI and make dev)"; exit 1

clean:
	rm -rf .bin dist cdk.out
