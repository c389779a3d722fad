#!/usr/bin/env bash
# The viewer under Xvfb: two screenshots of a synthetic capture with different
# methods, checked for the four panels and a changed map; the validation layer
# must stay silent (--debug-sync: the validation layer with its synchronisation checks; the viewer exits 1 on any message).
set -u
viewer=$1 kvscope=$2 check=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$kvscope" synth --out "$work/s.safetensors" --heads 8 --kv-heads 2 --dim 64 --tokens 512 >/dev/null || exit 1
shoot() {
  XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp} xvfb-run -a -s "-screen 0 1600x1000x24" \
    "$viewer" "$work/s.safetensors" --debug-sync --screenshot "$1" --method "$2" --budget 64 || { echo "FAIL: viewer exited $?"; exit 1; }
}
shoot "$work/quest.png" quest
shoot "$work/streaming.png" streaming
"$check" "$work/quest.png" "$work/streaming.png"
