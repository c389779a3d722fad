#!/usr/bin/env bash
# Every randomized test family over many fresh seeds, on whatever device the
# suite picks (lavapipe where there is no GPU): a family's cases run
# --gtest_repeat times in one process, each repetition drawing fresh inputs
# (test::test_seed(): a failure prints "seed N", and KVSCOPE_TEST_SEED=N
# replays it). Not part of the test command: at 300 seeds it takes hours on 2
# cores. The validation layer is off (KVSCOPE_TEST_NO_VALIDATION): this looks
# for numerical disagreements, which the suite's own runs check with it on.
#   tools/dev/seed_soak.sh [SEEDS] [TEST_BINARY]     default 300, build/tests/kvscope_tests
#   FAMILIES='ScoresTest:TopKTest' JOBS=2 tools/dev/seed_soak.sh 50
# Writes a table (family, seeds, failures, seconds) to standard output and
# each family's log under ${SOAK_DIR:-/tmp/kvscope-soak}; exits 1 on any failure.
set -uo pipefail
cd "$(dirname "$0")/../.."
seeds=${1:-300}
binary=${2:-build/tests/kvscope_tests}
jobs=${JOBS:-$(nproc)}
dir=${SOAK_DIR:-/tmp/kvscope-soak}
mkdir -p "$dir"
[ -x "$binary" ] || { echo "seed_soak: no test binary at $binary (build the tests first)" >&2; exit 2; }

# The families whose inputs are drawn afresh each run (random_capture,
# test_seed, random tiny models), each a gtest filter. The long cases
# (tests/CMakeLists.txt's KVSCOPE_LONG_CASES) are left out but for the model's
# passkey and greedy text, which draw nothing.
default_families=(
  '*MethodTest*-*_T16500_*:*_T13000_*:*_T9000_*:*_T12000_*:*_T2000_*:*_T1200_*:*T700_*'
  '*ScoresTest*'
  '*MetricsTest*/decode'
  '*MetadataTest*'
  '*SelectionInTheLoopTest*'
  '*TinyModelTest*'
  '*ModelRunTest*-*Passkey*:*GreedyText*'
  '*ModelOps*'
  '*QueryStatsTest*:*CurvePointTest*'
  '*DenseAttentionTest*-*_T12000_*:*_T2000_*'
  '*TopK*'
  'Capture.*'
  '*Ruler*'
)
if [ -n "${FAMILIES:-}" ]; then
  IFS=':' read -r -a families <<<"$FAMILIES"
  families=("${families[@]/#/*}")
  families=("${families[@]/%/*}")
else
  families=("${default_families[@]}")
fi

soak_family() {  # filter -> "family<TAB>seeds<TAB>failures<TAB>seconds<TAB>failing seeds"
  local filter=$1 log start failures failing
  log="$dir/$(echo "$filter" | tr -c 'A-Za-z0-9_\n' '_' | cut -c1-60).log"
  start=$(date +%s)
  KVSCOPE_TEST_NO_VALIDATION=1 "$binary" --gtest_filter="$filter" --gtest_repeat="$seeds" --gtest_brief=1 >"$log" 2>&1
  failures=$(grep -c '^\[  FAILED  \] .* ms)$' "$log")  # a failed case's own line, not the summaries'
  # The seeds of failures only: a skipped case prints its trace (and seed) too.
  failing=$(awk '/: Failure$/ { failed = 1 } /: Skipped$/ { failed = 0 }
                 failed && match($0, /seed [0-9]+/) { print substr($0, RSTART + 5, RLENGTH - 5); failed = 0 }' "$log" |
            sort -u | paste -sd, -)
  printf '%s\t%s\t%s\t%s\t%s\n' "$filter" "$seeds" "$failures" "$(($(date +%s) - start))" "${failing:--}"
}
export -f soak_family
export binary seeds dir

echo -e "family\tseeds\tfailures\tseconds\tfailing seeds"
printf '%s\n' "${families[@]}" | xargs -d '\n' -P "$jobs" -I{} bash -c 'soak_family "$1"' _ {} | tee "$dir/summary.tsv"
! awk -F'\t' '$3 != 0 { bad = 1 } END { exit !bad }' "$dir/summary.tsv"
