# tierlog — the commands that matter: `make run`, `make unit` (the
# development loop) and `make test` (every test, as CI runs them).
GO       ?= go
# LISTEN= and DATA_DIR= override `tierlog serve`'s flags; unset, the
# environment (TIERLOG_LISTEN, TIERLOG_DATA_DIR, every TIERLOG_* of
# `tierlog serve --help`) and then tierlog's own defaults apply.
LISTEN   ?=
DATA_DIR ?=

.PHONY: run unit test vet lint staticcheck fmt-check build build-functions cli bench bench-all clean simulate

## run: start tierlog locally on the embedded default (no AWS needed)
# The server replaces the recipe's shell (exec), so make's child is the
# server itself: `make run & ... kill $$!` stops it (make passes SIGTERM to
# its child; `go run` would leave its own child running, holding the port).
RUN_BIN ?= bin/tierlog
run:
	$(GO) build -o $(RUN_BIN) ./cmd/tierlog
	exec $(RUN_BIN) serve $(if $(LISTEN),--listen $(LISTEN)) $(if $(DATA_DIR),--data-dir $(DATA_DIR))

## unit: the development loop: every test that needs no Node.js and starts no program but the go command, with the race detector (-short skips the others; UNIT_SIM_SEEDS simulation seeds)
UNIT_SIM_SEEDS ?= 200
unit:
	SIM_SEEDS=$(UNIT_SIM_SEEDS) $(GO) test -race -short -count=1 ./...
	cd $(LITE_DIR) && $(GO) test -race -short -count=1 ./...

## test: every test, with the race detector (and the lite and CDK modules' tests)
test: fmt-check lint test-deps
	$(GO) test -race -count=1 -timeout 30m ./...
	cd $(LITE_DIR) && $(GO) test -race -count=1 ./...
	$(MAKE) cdk-test

## test-deps: what the tests need beyond Go: dynalite (pinned in tools/dynalite) and Debian's chromium (the console's browser tests)
test-deps:
	@command -v node >/dev/null || { echo "node is required (dynalite, CDK)"; exit 1; }
	cd tools/dynalite && npm ci --no-audit --no-fund --loglevel=error
	@test -x /usr/bin/chromium || { command -v apt-get >/dev/null || { echo "chromium is required (pkg/console's browser tests): install Debian's chromium"; exit 1; }; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

## screenshots: the console's pages as PNGs into docs/console/ (the browser test, with -console.screenshots)
.PHONY: screenshots
screenshots:
	$(GO) test -count=1 -run 'TestBrowser$$' ./pkg/console -console.screenshots $(CURDIR)/docs/console

# localstack/lite is a Go module of its own (it alone needs bbolt):
# unit, test, vet and staticcheck run in it too.
LITE_DIR := localstack/lite

vet:
	$(GO) vet ./...
	cd $(LITE_DIR) && $(GO) vet ./...

## lint: go vet and staticcheck (pinned in tools/staticcheck/go.mod)
lint: vet staticcheck

# staticcheck reads its checks from staticcheck.conf files where a
# directory has one.
staticcheck:
	$(GO) tool -modfile=tools/staticcheck/go.mod staticcheck ./...
	$(GO) build -modfile=tools/staticcheck/go.mod -o bin/staticcheck honnef.co/go/tools/cmd/staticcheck
	cd $(LITE_DIR) && $(CURDIR)/bin/staticcheck ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## build: the tierlog binary into bin/ and the Lambda function zips into dist/
build: build-functions cli

## cli: only the tierlog binary, bin/tierlog, for this machine (no Lambda cross-compiling)
cli:
	$(GO) build -o bin/tierlog ./cmd/tierlog

# The Lambda functions: linux/arm64 for provided.al2023, static, without the
# aws-lambda-go RPC path. LAMBDA_TAGS=lambda.norpc,noxray leaves X-Ray out.
FUNCTIONS     := produce fetch compactor deliver
LAMBDA_GOARCH ?= arm64
LAMBDA_TAGS   ?= lambda.norpc
DIST_DIR      ?= dist

## build-functions: dist/produce.zip, dist/fetch.zip, dist/compactor.zip, dist/deliver.zip, each holding a `bootstrap`
build-functions:
	@mkdir -p $(DIST_DIR)/bin
	CGO_ENABLED=0 GOOS=linux GOARCH=$(LAMBDA_GOARCH) $(GO) build -tags $(LAMBDA_TAGS) -trimpath -ldflags "-s -w" \
		-o $(DIST_DIR)/bin/ $(addprefix ./functions/,$(FUNCTIONS))
	$(GO) run ./tools/zipbin -name bootstrap $(foreach f,$(FUNCTIONS),$(DIST_DIR)/$(f).zip=$(DIST_DIR)/bin/$(f))

## bench: the storage benchmarks (segment append vs raw write+fsync, reads)
bench:
	$(GO) test -run '^$$' -bench . -benchtime 1s -count 3 ./pkg/segment ./pkg/index ./pkg/broker ./pkg/meta/local ./pkg/api ./pkg/wire ./pkg/client

## bench-contention: many writers on one partition (tierlog bench contention; needs make test-deps; CONTENTION_ARGS='--duration 4s --markdown')
CONTENTION_ARGS ?=
.PHONY: bench-contention
bench-contention:
	$(GO) build -o bin/tierlog ./cmd/tierlog
	bin/tierlog bench contention $(CONTENTION_ARGS)

## bench-cloud: the write path with EFS, API Gateway and DynamoDB latencies charged, and its cost (tierlog bench cloud; needs make test-deps; CLOUD_ARGS='--markdown --strace 200')
CLOUD_ARGS ?=
.PHONY: bench-cloud
bench-cloud:
	$(GO) build -o bin/tierlog ./cmd/tierlog
	bin/tierlog bench cloud $(CLOUD_ARGS)

## simulate: the deterministic simulation over many seeds, and a quarter as many of the lone-writer world (SEEDS=100000 FIRST=1 STEPS=0; no -race; parallel over GOMAXPROCS)
SEEDS ?= 10000
FIRST ?= 1
STEPS ?= 0
simulate:
	$(GO) test -count=1 -timeout 0 -run 'TestSimulate$$|TestSimulateLone$$' ./internal/sim -sim.seeds $(SEEDS) -sim.first $(FIRST) -sim.steps $(STEPS) -v

## clean: bin/, dist/ and the local data dir (DATA_DIR, else $$TIERLOG_DATA_DIR, else .tierlog)
clean:
	rm -rf bin $(DIST_DIR) $(or $(DATA_DIR),$(TIERLOG_DATA_DIR),.tierlog)

## ---- infra/cdk (its own Go module; see infra/cdk/README.md) ----
CDK_DIR  ?= infra/cdk
# Node 20 works but is past end of life for jsii: silence its banner.
CDK_ENV  := JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 CDK_DISABLE_CLI_TELEMETRY=true
# The function zips (produce.zip, fetch.zip, compactor.zip) the stack deploys.
DIST_DIR ?= dist
# Extra CDK CLI arguments, e.g. CDK_ARGS='-c removalPolicy=destroy -c fetchMemoryMB=2048'.
CDK_ARGS ?=
CDK_ZIPS := $(DIST_DIR)/produce.zip $(DIST_DIR)/fetch.zip $(DIST_DIR)/compactor.zip

.PHONY: cdk-deps synth bootstrap deploy cdk-test aws-check

# CDK_NPM_STAMP is touched after each npm ci in infra/cdk: npm ci runs again
# only when node_modules (and the stamp in it) is missing or older than
# package.json or package-lock.json.
NPM           ?= npm
CDK_NPM_STAMP := $(CDK_DIR)/node_modules/.tierlog-npm-ci
$(CDK_NPM_STAMP): $(CDK_DIR)/package-lock.json $(CDK_DIR)/package.json
	cd $(CDK_DIR) && $(NPM) ci --no-audit --no-fund
	touch $@

## cdk-deps: the pinned CDK CLI (npm ci from package-lock.json, only when node_modules is stale) and the CDK Go modules
cdk-deps: $(CDK_NPM_STAMP)
	cd $(CDK_DIR) && $(GO) mod download

## aws-check: fail in seconds, naming what to set, without usable AWS credentials (bootstrap and deploy run it first)
# With the aws CLI: aws sts get-caller-identity. Without it: a credential
# source the CDK CLI reads must be set (environment, shared files, a
# container or web-identity role, or the EC2 instance metadata service).
aws-check:
	@fix="set AWS_PROFILE (after aws configure or aws sso login), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary credentials)"; \
	if command -v aws >/dev/null 2>&1; then \
	  out=$$(AWS_PAGER= aws sts get-caller-identity --query Account --output text 2>&1) || { \
	    echo "aws-check: no usable AWS credentials (aws sts get-caller-identity: $$(echo "$$out" | tr -s '\n' ' '))"; \
	    echo "aws-check: $$fix"; exit 1; }; \
	  echo "aws-check: account $$out"; \
	elif [ -n "$$AWS_ACCESS_KEY_ID$$AWS_PROFILE$$AWS_WEB_IDENTITY_TOKEN_FILE$$AWS_CONTAINER_CREDENTIALS_RELATIVE_URI$$AWS_CONTAINER_CREDENTIALS_FULL_URI" ] || \
	     [ -f "$${AWS_SHARED_CREDENTIALS_FILE:-$$HOME/.aws/credentials}" ] || [ -f "$${AWS_CONFIG_FILE:-$$HOME/.aws/config}" ] || \
	     { [ "$$AWS_EC2_METADATA_DISABLED" != true ] && command -v curl >/dev/null && \
	       curl -sf -m 1 -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 60' http://169.254.169.254/latest/api/token >/dev/null; }; then \
	  echo "aws-check: found a credential source (no aws CLI to check it further)"; \
	else \
	  echo "aws-check: no AWS credentials: $$fix"; exit 1; \
	fi; \
	region=$${AWS_REGION:-$$AWS_DEFAULT_REGION}; \
	[ -n "$$region" ] || ! command -v aws >/dev/null 2>&1 || region=$$(aws configure get region 2>/dev/null); \
	echo "aws-check: region $${region:-not set: the CDK CLI uses us-east-1; set AWS_REGION to choose}"

## synth: the CloudFormation template into infra/cdk/cdk.out/ (offline; runs make build if dist/*.zip are missing)
synth: cdk-deps
	@ls $(CDK_ZIPS) >/dev/null 2>&1 || $(MAKE) build
	cd $(CDK_DIR) && $(CDK_ENV) npx --no-install cdk synth --quiet --no-notices -c distDir=$(abspath $(DIST_DIR)) $(CDK_ARGS)
	@echo "template: $(CDK_DIR)/cdk.out/$$(cd $(CDK_DIR) && ls cdk.out | grep template.json)"

## bootstrap: cdk bootstrap of the account and region of your AWS credentials (once, before the first deploy)
# (cdk bootstrap runs the app to find its environment, so it needs the zips too.)
bootstrap: aws-check cdk-deps
	@ls $(CDK_ZIPS) >/dev/null 2>&1 || $(MAKE) build
	cd $(CDK_DIR) && $(CDK_ENV) npx --no-install cdk bootstrap --no-notices -c distDir=$(abspath $(DIST_DIR)) $(CDK_ARGS)

## deploy: cdk deploy to the account and region of your AWS credentials (make bootstrap once first)
deploy: aws-check cdk-deps
	@ls $(CDK_ZIPS) >/dev/null 2>&1 || $(MAKE) build
	cd $(CDK_DIR) && $(CDK_ENV) npx --no-install cdk deploy --no-notices -c distDir=$(abspath $(DIST_DIR)) $(CDK_ARGS)

## cdk-test: the CDK assertions and cdk-nag tests (first build of the CDK module takes minutes)
cdk-test: cdk-deps
	cd $(CDK_DIR) && $(CDK_ENV) $(GO) test -count=1 -timeout 20m ./...

# ---- LocalStack and the Docker-free emulator (see localstack/README.md) ----
LOCALSTACK_COMPOSE := docker compose -f localstack/docker-compose.yml
LOCAL_HOT_DIR      ?= $(CURDIR)/.hot
LITE_LISTEN        ?= 127.0.0.1:4566
LITE_DATA_DIR      ?=
# cdklocal (aws-cdk-local 3.0.4) and the CDK CLI it wraps are both pinned in
# infra/cdk/package.json.
CDKLOCAL := npx --no-install cdklocal
LOCAL_AWS_ENV := AWS_ENDPOINT_URL=http://127.0.0.1:4566 AWS_ENDPOINT_URL_S3=http://127.0.0.1:4566 \
	AWS_S3_FORCE_PATH_STYLE=1 AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 \
	AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test \
	JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20
# The stack LocalStack gets: no EFS or VPC (LAMBDA_DOCKER_FLAGS bind-mounts
# ./.hot at /mnt/tierlog instead), functions of the architecture the zips
# were built for (LAMBDA_GOARCH=amd64 on x86 hosts).
LOCAL_CDK_ARGS := -c hotTier=bindMount -c removalPolicy=destroy \
	-c lambdaArch=$(LAMBDA_GOARCH) -c distDir=$(abspath $(DIST_DIR))

.PHONY: localstack-up localstack-down deploy-local lite

## localstack-up: LocalStack on 127.0.0.1:4566; ./.hot is the Lambda functions' /mnt/tierlog
# It checks first, in a second, what would otherwise fail later with
# docker's own usage text: docker and its compose plugin, and the zips'
# architecture against this host's (LocalStack runs the functions natively).
localstack-up:
	@command -v docker >/dev/null || { echo "localstack-up: docker is required (without Docker: make lite, see localstack/README.md)"; exit 1; }
	@docker compose version >/dev/null 2>&1 || { echo "localstack-up: the docker compose plugin is required (docker compose version fails): install docker-compose-plugin, or use make lite without Docker"; exit 1; }
	@host=$$(uname -m); case "$$host/$(LAMBDA_GOARCH)" in \
	  x86_64/arm64|amd64/arm64) echo "localstack-up: note: this host is $$host and the functions build for arm64; make deploy-local needs LAMBDA_GOARCH=amd64 here";; \
	  aarch64/amd64|arm64/amd64) echo "localstack-up: note: this host is $$host; LAMBDA_GOARCH=amd64 builds functions it cannot run natively";; \
	esac
	mkdir -p $(LOCAL_HOT_DIR)
	TIERLOG_HOT_HOST_DIR=$(LOCAL_HOT_DIR) $(LOCALSTACK_COMPOSE) up -d --wait

## localstack-down: stop LocalStack and remove its container
localstack-down:
	TIERLOG_HOT_HOST_DIR=$(LOCAL_HOT_DIR) $(LOCALSTACK_COMPOSE) down

## deploy-local: deploy infra/cdk into LocalStack with cdklocal (after make localstack-up; LAMBDA_GOARCH=amd64 on x86 hosts)
deploy-local: build $(CDK_NPM_STAMP)
	cd $(CDK_DIR) && $(LOCAL_AWS_ENV) $(CDKLOCAL) bootstrap aws://000000000000/us-east-1 $(LOCAL_CDK_ARGS) && \
	$(LOCAL_AWS_ENV) $(CDKLOCAL) deploy --require-approval never $(LOCAL_CDK_ARGS)

## lambda-local: the four functions under the Runtime Interface Emulator against lite, without Docker; prints the endpoints, Ctrl-C stops everything
# The functions are built for this machine (not LAMBDA_GOARCH); the
# emulator is installed into bin/ as functions/e2e installs it.
RIE_MODULE := github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@v0.0.0-20261030222936-bef5c4ba774d
.PHONY: lambda-local
lambda-local:
	@test -x bin/aws-lambda-rie || GOBIN=$(CURDIR)/bin CGO_ENABLED=0 $(GO) install $(RIE_MODULE)
	CGO_ENABLED=0 $(GO) build -tags lambda.norpc -o bin/fn/ $(foreach f,$(FUNCTIONS),./functions/$(f))
	$(GO) -C $(LITE_DIR) build -o $(CURDIR)/bin/tierlog-lite .
	exec env LITE_LISTEN=$(LITE_LISTEN) HOT_DIR=$(LOCAL_HOT_DIR) localstack/lambda-local.sh

## lite: S3 and DynamoDB on one endpoint without Docker (LITE_DATA_DIR=./.lite keeps objects)
lite:
	$(GO) -C $(LITE_DIR) run . --listen $(LITE_LISTEN) $(if $(LITE_DATA_DIR),--data-dir $(abspath $(LITE_DATA_DIR)))
