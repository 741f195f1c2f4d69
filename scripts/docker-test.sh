#!/usr/bin/env bash
# `make docker-test`: build both images and check them the way a user runs them (issue 29).
#
# Opt-in, not part of `make test`. Needs root (it may install Debian's docker.io and debootstrap
# and start dockerd) and a network that reaches the package registries this machine is set up for.
# No image registry is needed: when no Debian base image is present one is made with debootstrap.
# No bridge network is created: builds and the server test use the host's network, everything
# else runs with --network none, and the server binds 127.0.0.1 only.
#
#   make docker-test                        # everything
#   STEPS="base build audit" make docker-test   # some steps (base build audit ask serve kill compose)
#
# Each step prints "PASS name" or "FAIL name: why"; the summary at the end lists them, and the
# exit code is 0 only when every step that ran passed.
set -uo pipefail
cd "$(dirname "$0")/.."

SUITE=${SUITE:-bookworm}                 # Debian 12: its python3 is 3.11, the project's Python
BASE=${BASE:-debian:${SUITE}-slim}       # used as is when present (pulled or loaded by the user)
LOCAL_BASE=affidavit-base:${SUITE}       # else made here with debootstrap --variant=minbase
IMAGE=${IMAGE:-affidavit}
PORT=${PORT:-18741}
STEPS=${STEPS:-base build audit ask serve kill compose}
WORK=$(mktemp -d /tmp/affidavit-docker-test.XXXXXX)
RESULTS=()
FAILED=0
export DOCKER_BUILDKIT=${DOCKER_BUILDKIT:-0}  # the classic builder: no buildx plugin needed

log() { printf '== %s\n' "$*" >&2; }
pass() { RESULTS+=("PASS $1${2:+: $2}"); printf 'PASS %s%s\n' "$1" "${2:+: $2}"; }
fail() { RESULTS+=("FAIL $1: $2"); printf 'FAIL %s: %s\n' "$1" "$2"; FAILED=1; }
want() { [[ " $STEPS " == *" $1 "* ]]; }
cleanup() {
    docker rm -f affidavit-test-serve affidavit-test-ingest >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi; }

# -- the engine -------------------------------------------------------------------------------
ensure_docker() {
    if ! command -v dockerd >/dev/null 2>&1; then
        log "installing Debian's docker.io"
        as_root apt-get update -qq
        DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq docker.io >/dev/null
    fi
    if docker info >/dev/null 2>&1; then return 0; fi
    log "starting dockerd (no bridge, no iptables: this machine allows no bridge network)"
    as_root sh -c 'nohup dockerd --bridge=none --iptables=false --ip6tables=false \
        --ip-masq=false >/var/log/affidavit-dockerd.log 2>&1 &'
    for _ in $(seq 60); do docker info >/dev/null 2>&1 && return 0; sleep 1; done
    echo "dockerd did not start; see /var/log/affidavit-dockerd.log" >&2
    return 1
}

# The Debian mirror this machine's apt already uses (nothing about it is written into the repo).
apt_mirror() {
    local uri
    uri=$(grep -h -E '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security \
        | head -n1 | awk '{print $2}')
    if [ -z "$uri" ]; then
        uri=$(grep -h -E '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
            | grep -v security | head -n1 | sed -E 's/^deb (\[[^]]*\] )?//' | awk '{print $1}')
    fi
    echo "$uri"
}

ensure_base() {
    if docker image inspect "$BASE" >/dev/null 2>&1; then echo "$BASE"; return 0; fi
    if docker image inspect "$LOCAL_BASE" >/dev/null 2>&1; then echo "$LOCAL_BASE"; return 0; fi
    command -v debootstrap >/dev/null 2>&1 || {
        as_root apt-get update -qq
        DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq debootstrap >/dev/null
    }
    local mirror root
    mirror=$(apt_mirror)
    [ -n "$mirror" ] || { echo "no Debian mirror in this machine's apt sources" >&2; return 1; }
    root="$WORK/rootfs"
    log "debootstrap --variant=minbase $SUITE (from this machine's apt mirror)"
    as_root debootstrap --variant=minbase "$SUITE" "$root" "$mirror" >"$WORK/debootstrap.log" 2>&1 \
        || { tail -n 20 "$WORK/debootstrap.log" >&2; return 1; }
    # slim like the official image: no package lists, no caches, no docs
    as_root rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin \
        "$root"/var/cache/apt/archives/*.deb "$root"/usr/share/doc/* "$root"/usr/share/man/*
    as_root tar -C "$root" -c . | docker import \
        -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        -c 'CMD ["bash"]' - "$LOCAL_BASE" >/dev/null || return 1
    as_root rm -rf "$root"
    echo "$LOCAL_BASE"
}

# -- helpers ----------------------------------------------------------------------------------
# run a command in the image with no network, the sample corpus mounted read-only
offline() {
    local image=$1; shift
    docker run --rm --pull never --network none -v "$PWD/sample_corpus:/corpus:ro" \
        -v "$PWD/examples:/examples:ro" "${VOLS[@]}" "$image" "$@"
}

size_mb() { docker image inspect -f '{{.Size}}' "$1" | awk '{printf "%.0f MB", $1/1e6}'; }

# -- the steps --------------------------------------------------------------------------------
main() {
    ensure_docker || { fail engine "no Docker engine"; summary; }
    pass engine "$(docker version -f 'server {{.Server.Version}}' 2>/dev/null)"

    local base=""
    if want base || want build; then
        if base=$(ensure_base); then pass base "$base"; else fail base "no base image"; summary; fi
    fi

    if want build; then
        local t0 t1 target
        for target in nollm full; do
            t0=$(date +%s)
            if docker build --network host --build-arg BASE="$base" --target "$target" \
                --build-arg EXTRA_CA_CERTS="$(cat /usr/local/share/ca-certificates/*.crt 2>/dev/null)" \
                -t "$IMAGE:$target" . >"$WORK/build-$target.log" 2>&1; then
                t1=$(date +%s)
                pass "build $target" "$(size_mb "$IMAGE:$target"), $((t1 - t0)) s"
            else
                tail -n 30 "$WORK/build-$target.log"
                fail "build $target" "docker build failed"
            fi
        done
    fi

    # one set of volumes for the steps below, as a user would keep them across upgrades
    local vol
    VOLS=()
    for vol in store home tlog; do
        docker volume rm -f "affidavit-test-$vol" >/dev/null 2>&1 || true
        docker volume create "affidavit-test-$vol" >/dev/null
        VOLS+=(-v "affidavit-test-$vol:/data/$vol")
    done

    if want audit; then
        local out rc
        for target in full nollm; do
            out=$(offline "$IMAGE:$target" affidavit audit /examples/audit_failing.json --json 2>&1)
            rc=$?
            if [ $rc = 1 ] && grep -q '"trust_passed": *false' <<<"$out"; then
                pass "audit $target" "exit 1, trust_passed false, no network"
            else
                fail "audit $target" "exit $rc: $(tail -c 300 <<<"$out")"
            fi
        done
        # the default command on 0.0.0.0 with no API key must refuse to start
        out=$(docker run --rm --pull never --network none "${VOLS[@]}" "$IMAGE:nollm" 2>&1)
        rc=$?
        if [ $rc = 2 ] && grep -q "refusing to bind" <<<"$out"; then
            pass "serve refuses open" "exit 2 without an API key"
        else
            fail "serve refuses open" "exit $rc: $(tail -c 300 <<<"$out")"
        fi
    fi

    if want ask; then
        local cert=/data/home/answer.json
        out=$(offline "$IMAGE:full" affidavit ingest /corpus/docs 2>&1)
        rc=$?
        if [ $rc = 0 ] && ! grep -q "^failed" <<<"$out"; then
            pass "ingest" "$(grep -m1 "chunks in store" <<<"$out"), every file read, no network"
        else
            fail "ingest" "exit $rc: $(tail -c 300 <<<"$out")"
        fi
        offline "$IMAGE:full" affidavit keys generate >/dev/null 2>&1 || true
        local question="On what date did the Apollo 11 lunar module land on the Moon?"
        out=$(offline "$IMAGE:full" affidavit ask "$question" \
            --certify "$cert" --json 2>&1)
        rc=$?
        if [ $rc = 0 ] && grep -q '"decision": "verified"' <<<"$out"; then
            pass "ask" "a verified sentence, no network"
        else
            fail "ask" "exit $rc: $(tail -c 400 <<<"$out")"
        fi
        out=$(offline "$IMAGE:full" affidavit certificate verify "$cert" --log 2>&1)
        rc=$?
        [ $rc = 0 ] && pass "certificate verify" "$(tail -n 1 <<<"$out")" \
            || fail "certificate verify" "exit $rc: $(tail -c 300 <<<"$out")"
        out=$(offline "$IMAGE:nollm" affidavit search "Who discovered polonium?" -k 1 2>&1)
        rc=$?
        [ $rc = 0 ] && grep -qi "curie" <<<"$out" && pass "search nollm" "same store, no LLM" \
            || fail "search nollm" "exit $rc: $(tail -c 300 <<<"$out")"
    fi

    if want serve; then serve_step; fi
    if want kill; then kill_step; fi
    if want compose; then compose_step; fi
    summary
}

health() { docker inspect -f '{{.State.Health.Status}}' affidavit-test-serve; }

serve_step() {
    local target token t0 ready code
    for target in full nollm; do
        docker rm -f affidavit-test-serve >/dev/null 2>&1 || true
        token=$(docker run --rm --pull never --network none "${VOLS[@]}" "$IMAGE:$target" \
            affidavit keys api create --name "docker-test-$target" 2>/dev/null | tail -n1)
        [ -n "$token" ] || { fail "serve $target" "no API key created"; continue; }
        t0=$(date +%s.%N)
        # --network host: the container shares the machine's loopback; it binds 127.0.0.1 only
        docker run -d --pull never --name affidavit-test-serve --network host "${VOLS[@]}" \
            -e AFFIDAVIT_SERVE__HOST=127.0.0.1 -e AFFIDAVIT_SERVE__PORT="$PORT" \
            "$IMAGE:$target" >/dev/null || { fail "serve $target" "did not start"; continue; }
        ready=""
        for _ in $(seq 600); do
            code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/readyz" || true)
            if [ "$code" = 200 ]; then
                ready=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {print b - a}')
                break
            fi
            docker inspect -f '{{.State.Running}}' affidavit-test-serve 2>/dev/null | grep -q true \
                || break
            sleep 0.25
        done
        if [ -z "$ready" ]; then
            fail "serve $target /readyz" "not ready: $(docker logs affidavit-test-serve 2>&1 | tail -n 5)"
            continue
        fi
        pass "serve $target /readyz" "$(printf '%.1f' "$ready") s from docker run to ready"
        local body=@examples/audit_failing.json
        out=$(curl -s -w '\n%{http_code}' -H "Authorization: Bearer $token" \
            -H 'Content-Type: application/json' -d "$body" "http://127.0.0.1:$PORT/v1/audit")
        if [ "$(tail -n1 <<<"$out")" = 200 ] && grep -q '"trust_passed": *false' <<<"$out"; then
            pass "serve $target /v1/audit" "200 with a key, the date change caught"
        else
            fail "serve $target /v1/audit" "$(tail -c 300 <<<"$out")"
        fi
        code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
            -d "$body" "http://127.0.0.1:$PORT/v1/audit")
        [ "$code" = 401 ] && pass "serve $target unauthorised" "401 without a key" \
            || fail "serve $target unauthorised" "HTTP $code"
        # the image's HEALTHCHECK sees the same /readyz
        for _ in $(seq 90); do
            [ "$(health)" = healthy ] && break
            sleep 1
        done
        [ "$(health)" = healthy ] && pass "serve $target HEALTHCHECK" "healthy" \
            || fail "serve $target HEALTHCHECK" "$(health)"
        docker rm -f affidavit-test-serve >/dev/null
    done
}

kill_step() {
    # a fresh store and a corpus big enough that ingest is still writing when it is killed:
    # distinct files (a copy of one would add no chunk), each a numbered variant of a sample text
    local big="$WORK/big" i out rc
    mkdir -p "$big"
    for i in $(seq 20); do sed "s/\\bthe\\b/the [$i]/g" sample_corpus/docs/us_constitution.txt; done \
        >"$WORK/base.txt"
    for i in $(seq "${KILL_FILES:-24}"); do sed "s/^/($i) /" "$WORK/base.txt" >"$big/part-$i.txt"; done
    docker volume rm -f affidavit-test-kill >/dev/null 2>&1 || true
    docker run -d --pull never --name affidavit-test-ingest --network none -v "$big:/corpus:ro" \
        -v affidavit-test-kill:/data/store "$IMAGE:nollm" affidavit ingest /corpus >/dev/null
    # kill it once the first batches are committed and while later ones are being written
    local at_kill=0 n
    for _ in $(seq 120); do
        sleep 2
        docker inspect -f '{{.State.Running}}' affidavit-test-ingest | grep -q true || break
        n=$(store_check affidavit-test-kill | grep -oE '[0-9]+ chunks' | grep -oE '[0-9]+')
        if [ "${n:-0}" -gt 0 ]; then at_kill=$n; break; fi
    done
    if ! docker inspect -f '{{.State.Running}}' affidavit-test-ingest | grep -q true; then
        fail "kill mid-ingest" "ingest ended before it could be killed; raise KILL_FILES"
        docker rm -f affidavit-test-ingest >/dev/null
        return
    fi
    docker kill -s KILL affidavit-test-ingest >/dev/null
    docker rm -f affidavit-test-ingest >/dev/null
    out=$(store_check affidavit-test-kill)
    rc=$?
    [ $rc = 0 ] && pass "kill mid-ingest: store check" "$(tail -n 1 <<<"$out") (>= $at_kill seen)" \
        || fail "kill mid-ingest: store check" "exit $rc: $(tail -c 300 <<<"$out")"
    # restarted, the ingest finishes and the store is still whole
    out=$(docker run --rm --pull never --network none -v "$big:/corpus:ro" \
        -v affidavit-test-kill:/data/store "$IMAGE:nollm" affidavit ingest /corpus 2>&1)
    rc=$?
    local after after_rc
    after=$(store_check affidavit-test-kill)
    after_rc=$?
    if [ $rc = 0 ] && [ $after_rc = 0 ] && ! grep -q "^failed" <<<"$out"; then
        pass "kill mid-ingest: restart" "ingest finished; $(tail -n 1 <<<"$after")"
    else
        fail "kill mid-ingest: restart" "exit $rc: $(tail -c 300 <<<"$out$after")"
    fi
    docker volume rm -f affidavit-test-kill >/dev/null 2>&1 || true
}

# `affidavit store check` of a store volume (reads only)
store_check() {
    docker run --rm --pull never --network none -v "$1:/data/store" "$IMAGE:nollm" \
        affidavit store check 2>&1
}

compose_step() {
    local out py=python3
    if docker compose version >/dev/null 2>&1; then
        out=$(docker compose -f compose.yaml --profile qdrant config -q 2>&1) \
            && pass "compose.yaml" "docker compose config" || fail "compose.yaml" "$out"
        return
    fi
    # no compose plugin here (Debian 12 packages only Compose v1, which predates the file's
    # `required: false`): check the file's shape instead
    [ -x .venv/bin/python ] && py=.venv/bin/python
    out=$("$py" - <<'PY' 2>&1
import yaml

d = yaml.safe_load(open("compose.yaml"))
app, qdrant = d["services"]["affidavit"], d["services"]["qdrant"]
assert app["build"]["context"] == "." and "target" in app["build"], app["build"]
assert all(p.startswith("127.0.0.1:") for p in app["ports"]), "publish on loopback only"
mounts = {v.split(":")[1] for v in app["volumes"]}
assert {"/data/store", "/data/home", "/data/tlog"} <= mounts, mounts
assert qdrant["profiles"] == ["qdrant"] and app["depends_on"]["qdrant"]["required"] is False
assert set(d["volumes"]) >= {"store", "home", "tlog", "qdrant"}
PY
)
    if [ $? = 0 ]; then pass "compose.yaml" "parsed and checked (no compose plugin here)"
    else fail "compose.yaml" "$(tail -n 3 <<<"$out")"; fi
}

summary() {
    printf '\n== docker-test summary\n'
    printf '%s\n' "${RESULTS[@]}"
    if [ $FAILED = 0 ]; then echo "docker-test: all passed"; else echo "docker-test: FAILED"; fi
    exit $FAILED
}

main
