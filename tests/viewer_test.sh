#!/usr/bin/env bash
# The viewer under Xvfb: two screenshots of a synthetic capture with different
# methods, checked for the four panels and a changed map, then the default
# (the bundled real capture, no argument) against a third, then a needle run's
# results with one re-run through the model; the validation layer
# must stay silent (--debug-sync: the validation layer with its synchronisation checks; the viewer exits 1 on any message).
set -u
viewer=$1 kvscope=$2 check=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$kvscope" synth --out "$work/s.safetensors" --heads 8 --kv-heads 2 --dim 64 --tokens 512 >/dev/null || exit 1
shoot() {  # OUT.png, then the viewer's arguments
  local out=$1; shift
  XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp} xvfb-run -a -s "-screen 0 1600x1000x24" \
    "$viewer" "$@" --debug-sync --screenshot "$out" || { echo "FAIL: viewer exited $?"; exit 1; }
}
shoot "$work/quest.png" "$work/s.safetensors" --method quest --budget 64
shoot "$work/streaming.png" "$work/s.safetensors" --method streaming --budget 64
"$check" "$work/quest.png" "$work/streaming.png" || exit 1
shoot "$work/default.png" --method quoka
shoot "$work/default_streaming.png" --method streaming --budget 6%
"$check" "$work/default.png" "$work/default_streaming.png" || exit 1
# kvscope needle's results in their panel, one re-run through the model (its capture opened at the retrieval head).
debian5m=$(dirname "$0")/../assets/models/llama-debian-5m
"$kvscope" needle --model "$debian5m" --lengths 300 --depths 0.5 --methods dense,streaming --budgets 16 --json "$work/n.json" >/dev/null || exit 1
shoot "$work/needle.png" "$work/s.safetensors" --needle "$work/n.json" --needle-rerun 1
"$check" "$work/default.png" "$work/needle.png"
