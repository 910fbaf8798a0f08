#!/usr/bin/env bash
# Bounded fuzzing of every parser that reads hostile bytes (fuzz/, cargo-fuzz + libFuzzer):
# builds the targets, runs each for FUZZ_SECS (default 60) from the committed seeds, and
# fails on the first crash, leak of the limits below, or timeout; the input that did it is in
# fuzz/artifacts/<target>/ — make it a regression test. Prints each target's executions.
#
#   scripts/fuzz.sh                 # every target, 60 s each
#   FUZZ_SECS=10 scripts/fuzz.sh extract robots
#
# Runs on stable Rust without a sanitizer (`-s none`): libFuzzer's coverage guidance, panics
# and its own memory limits (-rss_limit_mb, -malloc_limit_mb: no allocation of more than
# 512 MiB at once) are the oracles.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
secs="${FUZZ_SECS:-60}"
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked --quiet
fi
cd fuzz
targets=("$@")
if ((${#targets[@]} == 0)); then
    mapfile -t targets < <(cargo fuzz list)
fi
cargo fuzz build -s none -O >/dev/null
printf 'target\tseconds\texecutions\texec_per_s\tcoverage\n'
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
    log="$(mktemp)"
    if ! cargo fuzz run -s none -O "$t" "corpus/$t" "seeds/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=10 \
        >"$log" 2>&1; then
        tail -n 40 "$log" >&2
        echo "fuzz.sh: $t FAILED (the input is in fuzz/artifacts/$t/)" >&2
        exit 1
    fi
    done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1)
    execs=$(sed -E 's/^#([0-9]+).*/\1/' <<<"$done_line")
    rate=$(sed -E 's/.*exec\/s: ([0-9]+).*/\1/' <<<"$done_line")
    cov=$(sed -E 's/.*cov: ([0-9]+).*/\1/' <<<"$done_line")
    printf '%s\t%s\t%s\t%s\t%s\n' "$t" "$secs" "$execs" "$rate" "$cov"
    rm -f "$log"
done
