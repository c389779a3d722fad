#!/usr/bin/env bash
# CI's fuzzing run: first every kept crash reproducer (tests/fuzz/crashes/TARGET, a
# regression test each), then libFuzzer for a bounded time from the seed corpus
# (a scratch copy, so the repository's corpus stays as committed). Any crash,
# hang (-timeout), leak or sanitizer report makes libFuzzer exit non-zero.
set -u
fuzzer=$1 corpus=$2 seconds=${3:-60}
here=$(dirname "$0")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
crashes="$here/crashes/$(basename "$fuzzer")"
if compgen -G "$crashes/*" >/dev/null; then
  "$fuzzer" -runs=0 "$crashes"/* || { echo "FAIL: a kept crash reproducer fails again"; exit 1; }
fi
cp "$corpus"/* "$work"/
cd "$work" && "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "$work" >log 2>&1
status=$?
# On a failure, the report's first lines and the input itself, so that CI's log alone reproduces it
# (base64 -d into tests/fuzz/crashes/TARGET/NAME keeps it as a regression test).
if [ "$status" != 0 ]; then
  grep -m1 -B2 -A8 -E 'ERROR|terminate called|runtime error' log
  for input in crash-* leak-* timeout-* oom-*; do
    [ -f "$input" ] && { echo "the input $input, base64:"; base64 -w0 "$input" | head -c 8192; echo; }
  done
fi
tail -12 log
exit "$status"
