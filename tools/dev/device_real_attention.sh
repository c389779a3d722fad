#!/usr/bin/env bash
# docs/real-attention.md's tables on the GPU machine: tools/studies/real_attention.py
# with llama-debian-27m (its two halves in .m1/ and .m2/, tools/dev/README.md),
# the captures kept in /tmp/ra between calls; tables.md, summary.json and the
# eval JSON come back in $OUT as one archive.
set -u
. tools/dev/device_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
M=/tmp/m27
[ -f $M/model.safetensors ] || { mkdir -p $M; cat .m1/part .m2/part > $M/model.safetensors; cp .m2/*.json $M/; }
python3 tools/studies/real_attention.py --kvscope "$B/kvscope" --model $M --out /tmp/ra "$@"
tar -C /tmp/ra -czf "$OUT/real_attention.tgz" --exclude='*.safetensors' .
