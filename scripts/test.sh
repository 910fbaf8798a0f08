#!/usr/bin/env bash
# Runs the whole test suite: `cargo test` for every crate, then the cross-checks against the
# real Guava (Java 17 + Debian's libguava-java), which this script installs when missing.
#
#   scripts/test.sh            # everything
#   SKIP_JAVA=1 scripts/test.sh  # Rust tests only (the committed Guava fixtures still run)
#   SKIP_SERVICE_TOOLS=1 …       # do not install Python's prometheus_client, selenium, grpcio-tools
#                                  # nor Chromium (the tests needing them then skip)
#   SKIP_REDIS=1 …               # do not install redis-server (the Redis tests then skip)
#   SKIP_WARCIO=1 …              # do not install warcio (the WARC reading tests then skip)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

GUAVA_JAR="${GUAVA_JAR:-/usr/share/java/guava.jar}"

# Installs Debian packages (as root, with apt-get), saying why: `apt_install WHY PKG...`.
apt_install() {
    local why=$1; shift
    if [[ "$(id -u)" -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
        echo "test.sh: $why missing and cannot apt-get install here" >&2
        return 1
    fi
    echo "test.sh: installing $*" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "$@" >/dev/null
}

# Debian packages the Java cross-checks need; installed only when something is missing.
install_java() {
    if command -v javac >/dev/null 2>&1 && [[ -f "$GUAVA_JAR" ]]; then
        return 0
    fi
    apt_install "javac or $GUAVA_JAR" openjdk-17-jdk-headless libguava-java
}

# What the service's tests use from outside Rust: Python's prometheus_client (the real
# Prometheus text parser), schemathesis (the API against its OpenAPI document), grpcio-tools
# (Google's protoc and protobuf runtime, against the url-frontier .proto) and selenium,
# Debian's chromium and its driver (the dashboard in a real browser). Installed only when
# missing; the tests then require them.
install_service_test_tools() {
    local py_missing=()
    python3 -c "import prometheus_client" 2>/dev/null || py_missing+=(prometheus_client)
    python3 -c "import selenium" 2>/dev/null || py_missing+=(selenium)
    command -v schemathesis >/dev/null 2>&1 || py_missing+=(schemathesis)
    # protoc as url-frontier's Python clients use it: crates/urlfrontier-proto's tests.
    python3 -c "import grpc_tools.protoc" 2>/dev/null || py_missing+=(grpcio-tools)
    if ((${#py_missing[@]})); then
        echo "test.sh: pip installing ${py_missing[*]}" >&2
        python3 -m pip install -q "${py_missing[@]}" 2>/dev/null \
            || python3 -m pip install -q --break-system-packages "${py_missing[@]}"
    fi
    if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
        apt_install chromium/chromedriver chromium chromium-driver
    fi
    # Not CRAWLER_*: the crawler refuses unknown variables of its own prefix.
    export REQUIRE_SERVICE_TEST_TOOLS=1
}

if [[ "${SKIP_SERVICE_TOOLS:-0}" != 1 ]]; then
    install_service_test_tools
fi

# Debian's redis-server for the Redis frontier's tests, which start private instances on
# free loopback ports (never 6379, never one they did not start) and stop them at the end.
install_redis() {
    # The package's own service is not used: the tests start their own servers.
    command -v redis-server >/dev/null 2>&1 || apt_install redis-server redis-server
    export REQUIRE_REDIS_TESTS=1
}
if [[ "${SKIP_REDIS:-0}" != 1 ]]; then
    install_redis
fi

# warcio (Webrecorder, PyPI) reads the WARC files the crawler writes: crates/warc's tests.
install_warcio() {
    command -v warcio >/dev/null 2>&1 || python3 -m pip install -q warcio 2>/dev/null \
        || python3 -m pip install -q --break-system-packages warcio
    export REQUIRE_WARCIO=1
}
if [[ "${SKIP_WARCIO:-0}" != 1 ]]; then
    install_warcio
fi

echo "== cargo test --workspace"
cargo test --workspace --locked

if [[ "${SKIP_JAVA:-0}" == 1 ]]; then
    echo "== Guava cross-checks skipped (SKIP_JAVA=1)"
    exit 0
fi
install_java

echo "== Guava cross-check 1: the committed fixtures are what Guava writes today"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
GUAVA_JAR="$GUAVA_JAR" crates/bloom/java/gen-fixtures.sh "$work/fixtures" 2>/dev/null
diff -r crates/bloom/tests/fixtures/guava "$work/fixtures"
echo "fixtures identical ($(ls "$work/fixtures" | wc -l) files)"

echo "== Guava cross-check 2: Java reads what 'crawler bloom build' wrote"
crawler=target/debug/crawler
[[ -x "$crawler" ]] || cargo build --locked --bin crawler
javac -encoding UTF-8 -cp "$GUAVA_JAR" -d "$work/classes" crates/bloom/java/GuavaQuery.java
# Keys with non-ASCII text; probes are the keys plus as many never-inserted ones.
for i in $(seq 1 3000); do echo "https://host$((i % 37)).example.com/页面/$i?q=é$i"; done >"$work/keys"
for i in $(seq 3001 9000); do echo "https://host$((i % 37)).example.com/页面/$i?q=é$i"; done >"$work/absent"
cat "$work/keys" "$work/absent" >"$work/probes"
"$crawler" bloom build --expected 3000 --fpp 0.01 --out "$work/f.bloom" --input "$work/keys"
"$crawler" bloom query "$work/f.bloom" --input "$work/probes" >"$work/ours"
java -cp "$work/classes:$GUAVA_JAR" GuavaQuery "$work/f.bloom" <"$work/probes" >"$work/guava"
diff "$work/ours" "$work/guava"
echo "Guava and crawler agree on $(wc -l <"$work/probes") probes" \
     "($(head -n 3000 "$work/ours" | grep -c 1) of 3000 inserted present," \
     "$(tail -n 6000 "$work/ours" | grep -c 1 || true) of 6000 absent are false positives)"
