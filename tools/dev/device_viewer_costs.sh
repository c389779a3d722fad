#!/usr/bin/env bash
# Run on the GPU machine (device tool), carrying .gl and .devbin: what the viewer
# pays per change on a 32k capture (H=32, G=8, d=128), measured through the same
# engine calls (`kvscope inspect`): a change of setting, the query statistics of
# the cosine panel, and one point of the recall curves (the viewer computes
# points for 12 ms a frame after a layer, regime or parameter change).
set -u
. "$(dirname "$0")/device_env.sh"
$B/kvscope synth --out /tmp/s32k.safetensors --tokens 32768 >/dev/null
for mode in decode prefill; do
  for m in oracle quoka quest fier streaming; do
    printf '%-8s %-10s ' $mode $m
    $B/kvscope inspect --capture /tmp/s32k.safetensors --$mode --method $m --budget 2048 --repeat 20 | tail -2 | tr '\n' ' '; echo
  done
done
