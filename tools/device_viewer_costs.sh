#!/usr/bin/env bash
# Run on the GPU machine (device tool), carrying .gl and .devbin: what the viewer
# pays per change on a 32k capture (H=32, G=8, d=128), measured through the same
# engine calls (`kvscope inspect`), and the curve sweep it runs on a layer or
# regime change (`kvscope eval` with the viewer's probes and budgets).
set -u
. "$(dirname "$0")/device_env.sh"
$B/kvscope synth --out /tmp/s32k.safetensors --tokens 32768 >/dev/null
for mode in decode prefill; do
  for m in oracle quoka quest fier streaming; do
    printf '%-8s %-10s ' $mode $m
    $B/kvscope inspect --capture /tmp/s32k.safetensors --$mode --method $m --budget 2048 --repeat 20 | tail -1
  done
done
for mode in decode; do
  /usr/bin/time -f "curves ($mode, 4 probes, 6 methods, budgets 16..4096): %e s wall" \
    $B/kvscope eval --capture /tmp/s32k.safetensors --$mode --probes 4 --budgets 16,32,64,128,256,512,1024,2048,4096 >/dev/null
done
/usr/bin/time -f "curves (prefill, last 2 chunks, 6 methods, budgets 16..4096): %e s wall" \
  $B/kvscope eval --capture /tmp/s32k.safetensors --prefill --chunks 2 --budgets 16,32,64,128,256,512,1024,2048,4096 >/dev/null
