# tierlog — the two commands that matter: `make run` and `make test`.
GO       ?= go
LISTEN   ?= 127.0.0.1:8080
DATA_DIR ?= ./.tierlog

.PHONY: run test vet fmt-check build bench bench-all clean

## run: start tierlog locally on the embedded default (no AWS needed)
run:
	$(GO) run ./cmd/tierlog serve --listen $(LISTEN) --data-dir $(DATA_DIR)

## test: every test, with the race detector
test: fmt-check vet
	$(GO) test -race -count=1 -timeout 30m ./...

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## build: the tierlog binary into bin/
build:
	$(GO) build -o bin/tierlog ./cmd/tierlog

## bench: the storage benchmarks (segment append vs raw write+fsync, reads)
bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s -count 3 ./pkg/segment ./pkg/meta/... ./pkg/api

clean:
	rm -rf bin $(DATA_DIR)
