#!/usr/bin/env bash
# lambda-local.sh runs tierlog's four Lambda functions (produce, fetch,
# compactor, deliver) on this machine, each under the Lambda Runtime
# Interface Emulator, against localstack/lite (S3 and DynamoDB on one
# endpoint), without Docker. It prints each endpoint and a line
# "lambda-local: ready" once all answer; Ctrl-C (or SIGTERM) stops them
# all. `make lambda-local` builds what it runs and starts it; see
# localstack/README.md.
#
# Environment (defaults in brackets):
#   FN_DIR        the function binaries: produce, fetch, compactor, deliver [bin/fn]
#   RIE           the aws-lambda-rie binary [bin/aws-lambda-rie]
#   LITE          the localstack/lite binary [bin/tierlog-lite]
#   LITE_LISTEN   lite's address [127.0.0.1:4566]
#   HOT_DIR       the functions' shared hot tier (EFS when deployed) [.hot]
#   LAMBDA_PORTS  eight ports on 127.0.0.1: the four functions' invoke
#                 endpoints, then their runtime APIs [9001 9002 9003 9004 9101 9102 9103 9104]
set -euo pipefail

FN_DIR=${FN_DIR:-bin/fn}
RIE=${RIE:-bin/aws-lambda-rie}
LITE=${LITE:-bin/tierlog-lite}
LITE_LISTEN=${LITE_LISTEN:-127.0.0.1:4566}
HOT_DIR=${HOT_DIR:-.hot}
read -r -a ports <<<"${LAMBDA_PORTS:-9001 9002 9003 9004 9101 9102 9103 9104}"
functions=(produce fetch compactor deliver)

die() { echo "lambda-local: $*" >&2; exit 1; }
[ "${#ports[@]}" -eq 8 ] || die "LAMBDA_PORTS has ${#ports[@]} ports, want 8"
for f in "${functions[@]}"; do [ -x "$FN_DIR/$f" ] || die "no function binary $FN_DIR/$f (make lambda-local builds it)"; done
[ -x "$RIE" ] || die "no emulator $RIE (make lambda-local installs it)"
[ -x "$LITE" ] || die "no lite binary $LITE (make lambda-local builds it)"
mkdir -p "$HOT_DIR"
HOT_DIR=$(cd "$HOT_DIR" && pwd)

pids=()
stop() {
	trap - INT TERM EXIT
	[ "${#pids[@]}" -gt 0 ] || return 0
	kill -TERM "${pids[@]}" 2>/dev/null || true
	wait || true
	echo "lambda-local: stopped"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# await HOST:PORT waits up to 10 s for a TCP listener there.
await() {
	local host=${1%:*} port=${1##*:} i
	for ((i = 0; i < 100; i++)); do
		if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	die "nothing listens on $1 after 10 s"
}

# A port already taken (a `make lite` still running, another copy of this
# script) would be found listening below by the wrong process.
for a in "$LITE_LISTEN" "${ports[@]/#/127.0.0.1:}"; do
	if (exec 3<>"/dev/tcp/${a%:*}/${a##*:}") 2>/dev/null; then
		die "$a is in use (a make lite or make lambda-local still running?); stop it, or set LITE_LISTEN or LAMBDA_PORTS"
	fi
done

"$LITE" --listen "$LITE_LISTEN" &
pids+=($!)
await "$LITE_LISTEN"

invoke_url() { echo "http://127.0.0.1:$1/2015-03-31/functions/function/invocations"; }

for i in "${!functions[@]}"; do
	f=${functions[$i]}
	env=(AWS_LAMBDA_FUNCTION_NAME="$f" AWS_ENDPOINT_URL="http://$LITE_LISTEN" AWS_REGION=us-east-1
		AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_EC2_METADATA_DISABLED=true
		TIERLOG_CREATE_RESOURCES=true TIERLOG_TABLE=tierlog TIERLOG_BUCKET=tierlog TIERLOG_HOT_DIR="$HOT_DIR")
	if [ "$f" = produce ]; then
		# produce notifies the compactor on a roll, through the Lambda
		# API of the compactor's emulator. (The emulator serves one
		# function, so produce does not also wake deliver: invoke
		# deliver yourself, as its schedule does when deployed.)
		env+=(TIERLOG_COMPACTOR_FUNCTION=function AWS_ENDPOINT_URL_LAMBDA="http://127.0.0.1:${ports[2]}")
	fi
	env "${env[@]}" "$RIE" --runtime-interface-emulator-address "127.0.0.1:${ports[$i]}" \
		--runtime-api-address "127.0.0.1:${ports[$((i + 4))]}" --log-level warn "$FN_DIR/$f" &
	pids+=($!)
done
for i in "${!functions[@]}"; do await "127.0.0.1:${ports[$i]}"; done

echo "lambda-local: lite (S3 and DynamoDB)  http://$LITE_LISTEN"
for i in "${!functions[@]}"; do
	printf 'lambda-local: %-10s %s\n' "${functions[$i]}" "$(invoke_url "${ports[$i]}")"
done
echo "lambda-local: hot tier $HOT_DIR"
cat <<USAGE
lambda-local: an API Gateway HTTP API (payload 2.0) event to produce:
  curl -s $(invoke_url "${ports[0]}") -d '{"version":"2.0","routeKey":"\$default","rawPath":"/v1/topics",
    "headers":{"content-type":"application/json"},"requestContext":{"http":{"method":"POST","path":"/v1/topics"}},
    "body":"{\"name\":\"orders\"}","isBase64Encoded":false}'
lambda-local: ready; Ctrl-C stops everything
USAGE
# Until a signal, or until one of them ends (bash 4.3 and later; an older
# bash, as macOS ships, waits for them all).
if ((BASH_VERSINFO[0] > 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] >= 3))); then
	wait -n || true
else
	wait || true
fi
die "a process ended on its own; stopping the others"
