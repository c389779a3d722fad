#!/usr/bin/env bash
# RULER on the GPU machine (docs/results.md "RULER"): llama-debian-27m on niah_single_1
# and niah_multikey_2 at 4k-16k with dense and each seed method, in the decode
# regime (Quest, Fier, QuoKA, StreamingLLM) and the prefill regime (QuoKA,
# StreamingLLM); then the issue's command on the bundled llama-debian-5m.
# Carried in two calls less than 30 s apart (the tree and a carry make at
# most 64 MiB): .m27p1/part, the first 26 MB of model.safetensors.xz, copied
# to /tmp/m27parts by the first call; then .m27x/ with the rest
# (model.part2), kvscope stripped, the model's JSON files, libicu72,
# wamerican and the Vulkan loader's .debs, with the bundled captures moved out
# of the tree for that call.
set -u
X=.m27x
for f in $X/*.deb; do dpkg -x "$f" /; done
ldconfig
K=$X/kvscope
$K devices 2>/dev/null | grep -q NVIDIA || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export XDG_RUNTIME_DIR=/tmp
M=/tmp/m27
[ -f $M/model.safetensors ] || { mkdir -p $M; cat /tmp/m27parts/p1 $X/model.part2 | xz -dc > $M/model.safetensors; cp $X/*.json $M/; }
[ -s $M/model.safetensors ] || { echo "no model: the first call's part is gone (the machine was released between the calls)"; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
R=${OUT:-/tmp}/ruler; mkdir -p $R
run() {  # run NAME ARGS...: timed, its table to NAME.txt
  local name=$1; shift
  local start=$(date +%s)
  $K ruler "$@" --json $R/$name.json --csv $R/$name.csv > $R/$name.txt 2>&1
  echo "$name: rc $?, $(( $(date +%s) - start )) s"
  tail -12 $R/$name.txt
}
common="--model $M --tasks niah_single_1,niah_multikey_2 --lengths 4096,8192,16384 --samples ${SAMPLES:-10}"
run decode $common --methods dense,quest,fier,quoka,streaming --budgets 128,512 --regime decode
run prefill $common --methods quoka,streaming --budgets 512,2048 --regime prefill
run issue --model assets/models/llama-debian-5m --tasks niah_single_1,vt --lengths 4096 --methods dense,quest,fier,quoka --budgets 256
