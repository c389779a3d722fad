#!/usr/bin/env bash
# docs/perf.md's decode tables and the GPU suite in one call (carry .gl, .icu
# and .devbin with kvscope and kvscope_tests): device_decode_floor.sh with
# SLICES=1, the per-stage GPU ms of its speed runs (stages.txt), the seed
# papers' Quest and Fier tables (device_papers.sh PARTS=quest,fier), then the
# suite with the validation layer, without it, and the CLI contract side by
# side. A call returns at most 8 files, so the JSONs come back as json.tgz.
set -u
. tools/dev/device_env.sh
# kvscope_tests looks for the real tokenizers where its build extracted them.
tokenizers=$(strings "$B/kvscope_tests" | grep -m1 '/build/tests/tokenizers$' || true)
[ -n "$tokenizers" ] && mkdir -p "$tokenizers" && tar xf tests/data/tokenizers.tar.xz -C "$tokenizers"
RESULTS=$OUT
export OUT=$RESULTS/j
mkdir -p "$OUT"
SLICES=1 timeout 180 bash tools/dev/device_decode_floor.sh > "$RESULTS/floor.txt" 2>&1
python3 - > "$RESULTS/stages.txt" 2>&1 <<'PY'
import glob, json, os
for f in sorted(glob.glob(os.environ['OUT'] + '/speed8b_*.json') + glob.glob(os.environ['OUT'] + '/longchat_*.json')):
    for r in json.load(open(f))['results']:
        stages = {k: round(v, 3) for k, v in r['gpu_ms_by_stage'].items() if v}
        print(os.path.basename(f), r['method'], r['budget'], round(r['ms_per_token'], 3), stages)
PY
PARTS=quest,fier timeout 150 bash tools/dev/device_papers.sh > "$RESULTS/papers.txt" 2>&1
( KVSCOPE_TEST_DEVICE=NVIDIA timeout 300 $B/kvscope_tests --gtest_brief=1 > "$RESULTS/suite_validated.txt" 2>&1
  echo "rc $?" >> "$RESULTS/suite_validated.txt" ) &
( KVSCOPE_TEST_NO_VALIDATION=1 KVSCOPE_TEST_DEVICE=NVIDIA timeout 300 $B/kvscope_tests --gtest_brief=1 \
    > "$RESULTS/suite_plain.txt" 2>&1
  echo "rc $?" >> "$RESULTS/suite_plain.txt" ) &
( timeout 300 tests/cli_test.sh $B/kvscope > "$RESULTS/cli.txt" 2>&1; echo "rc $?" >> "$RESULTS/cli.txt" ) &
wait
tar czf "$RESULTS/json.tgz" -C "$RESULTS" j && rm -rf "$RESULTS/j"
cut -c1-400 "$RESULTS/stages.txt"
grep -E "total|^dense|^quest|^===" "$RESULTS/floor.txt" | cut -c1-150
grep -vE "^kvscope: note" "$RESULTS/papers.txt" | cut -c1-150 | tail -40
for f in suite_validated suite_plain cli; do echo "== $f"; tail -6 "$RESULTS/$f.txt"; done
