#!/usr/bin/env bash
# With the model in the loop, on the GPU machine (docs/results.md "With the model in the
# loop"): kvscope needle (passkey and key-value, decode and prefill regimes) and
# kvscope ppl with llama-debian-27m, then generate's speed with each method
# and kvscope speed's interleaved runs in both regimes, beside
# tools/peers/bench_hf.py; everything into $OUT/loop.tgz. LOOP_PARTS picks parts
# (default "needle ppl speed interleaved").
set -u
. tools/dev/device_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
M=/tmp/m27
[ -f $M/model.safetensors ] || { mkdir -p $M; cat .m1/part .m2/part > $M/model.safetensors; cp .m2/*.json $M/; }
R=/tmp/loop; mkdir -p $R
K="$B/kvscope"
parts=" ${LOOP_PARTS:-needle ppl speed interleaved} "
part() { [[ $parts == *" $1 "* ]]; }
common="--model $M --lengths 2048,8192,16384 --depths 0.1,0.3,0.5,0.7,0.9 --methods dense,quest,fier,streaming,quoka,tova,sparq"
part needle && for task in passkey kv; do
  for regime in decode prefill; do
    start=$(date +%s)
    $K needle $common --task $task --budgets 32,64,128,256,1024 --regime $regime --json $R/needle_${task}_$regime.json \
      --plot $R/needle_${task}_$regime.png > $R/needle_${task}_$regime.txt 2>&1
    rc=$?
    echo "needle $task $regime: $(( $(date +%s) - start )) s, rc $rc"
  done
done
part ppl && {
start=$(date +%s)
$K ppl --model $M --length 8192 --scored 512 --methods dense,quest,fier,streaming,quoka,tova,sparq --budgets 64,256,1024 \
  --regime both --json $R/ppl.json > $R/ppl.txt 2>&1
echo "ppl: $(( $(date +%s) - start )) s"; cat $R/ppl.txt
}
python3 - <<'PY'
import sys; sys.path.insert(0, "tools")
from transformers import AutoTokenizer
from capture_qkv import passkey_prompt
tok = AutoTokenizer.from_pretrained("/tmp/m27")
for length in (4096, 16000):
    text, ids, span = passkey_prompt(tok, length, 0.5, passkey=27465)
    open(f"/tmp/loop/p{length}.txt", "w").write(text)
PY
speed() {  # name, then generate's flags
  local name=$1; shift
  for rep in 1 2; do $K generate --model $M --steps 64 --json $R/speed_$name.json "$@" > $R/speed_$name.txt 2>/dev/null; done
  python3 -c "import json;j=json.load(open('$R/speed_$name.json'));p=j['gpu_ms_by_part'];t=sum(p.values());print('%-24s ttft %8.1f ms decode %6.3f ms/tok attention %4.1f%% selection %4.1f%% of GPU time'%('$name',j['time_to_first_token_ms'],j['decode_ms_per_token'],100*p['attention']/t,100*p['selection']/t))"
}
part speed && for L in 4096 16000; do
  speed dense_$L --prompt-file $R/p$L.txt
  speed quoka1024_$L --prompt-file $R/p$L.txt --prefill-method quoka --prefill-budget 1024
  speed quoka2048_$L --prompt-file $R/p$L.txt --prefill-method quoka --prefill-budget 2048
  for b in 256 1024 2048; do
    speed quest${b}_$L --prompt-file $R/p$L.txt --method quest --budget $b
    speed fier${b}_$L --prompt-file $R/p$L.txt --method fier --budget $b
  done
done
part interleaved && for L in 4096 16000; do
  $K speed --model $M --prompt-file $R/p$L.txt --steps 64 --rounds 3 --methods dense,quest,fier \
    --budgets 256,1024,2048 --json $R/decode_$L.json > $R/decode_$L.txt 2>&1
  $K speed --model $M --prompt-file $R/p$L.txt --regime prefill --steps 8 --rounds 5 --methods dense,quoka \
    --budgets 1024,2048 --json $R/prefill_$L.json > $R/prefill_$L.txt 2>&1
  cat $R/decode_$L.txt $R/prefill_$L.txt
done
timeout 150 python3 tools/peers/bench_hf.py --model $M --lengths 4096,16000 --new-tokens 64 --repeats 2 --modes eager | tee $R/bench_hf.jsonl
tar -C $R -czf "$OUT/loop.tgz" --exclude='p[0-9]*.txt' .
