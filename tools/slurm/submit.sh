#!/usr/bin/env bash
# A kvscope sweep (needle, ppl, speed or eval) as a Slurm array job, one
# shard a task and one GPU each, then its merge as a job that waits for the
# array. Prints the two job ids; the results land in OUT (docs/usage.md, "Sweeps that
# lose nothing").
#   bash tools/slurm/submit.sh [--shards N] [--gpus-per-task G] [--out DIR]
#        [--wait] [--kvscope PATH] [--sbatch "OPTIONS"] -- COMMAND ARGS...
#   --shards N         array tasks, one shard each (default 4)
#   --gpus-per-task G  GPUs a task asks for (default 1; 0 asks for none)
#   --out DIR          where the shards' files and the merge go (default
#                      kvscope-sweep-DATE); must be on storage every node sees
#   --wait             return when the merge has ended, with its exit code
#   --sbatch "OPTS"    more sbatch options for both jobs (--partition, --time, ...)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shards=4 gpus=1 out="kvscope-sweep-$(date +%Y%m%d-%H%M%S)" wait=0 extra=()
kvscope=$(command -v kvscope || echo "$here/../../build/bin/kvscope")
while [ $# -gt 0 ]; do
  case $1 in
    --shards) shards=$2; shift 2 ;;
    --gpus-per-task) gpus=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --wait) wait=1; shift ;;
    --kvscope) kvscope=$2; shift 2 ;;
    --sbatch) read -r -a more <<<"$2"; extra+=("${more[@]}"); shift 2 ;;
    --) shift; break ;;
    *) echo "submit.sh: unknown option $1 (the kvscope command comes after --)" >&2; exit 2 ;;
  esac
done
[ $# -ge 1 ] || { echo "submit.sh: no kvscope command after --" >&2; exit 2; }
case $1 in
  needle|ppl|speed|eval) ;;
  *) echo "submit.sh: $1 is not a sweep (needle, ppl, speed, eval)" >&2; exit 2 ;;
esac
[[ $shards =~ ^[1-9][0-9]*$ ]] || { echo "submit.sh: --shards takes a positive count" >&2; exit 2; }
kvscope=$(realpath "$kvscope")
mkdir -p "$out"
out=$(realpath "$out")
gres=()
[ "$gpus" != 0 ] && gres=(--gpus-per-task="$gpus")

array=$(sbatch --parsable "${extra[@]}" "${gres[@]}" --array=0-$((shards - 1)) --output="$out/shard-%a.log" \
               "$here/sweep_task.sh" "$kvscope" "$out" "$@")
array=${array%%;*}
echo "array job $array: $shards shards of kvscope $1 into $out"
merge=$(sbatch --parsable "${extra[@]}" --dependency=afterok:"$array" --kill-on-invalid-dep=yes \
               --output="$out/merge.log" "$here/merge_task.sh" "$kvscope" "$out" "$1")
merge=${merge%%;*}
echo "merge job $merge: $out/results.jsonl and its reports once the array has ended"
[ $wait = 0 ] && exit 0
# Polled each second (sbatch --wait backs off to half a minute between polls).
while state=$(scontrol show job -o "$merge" | grep -o 'JobState=[A-Z_]*'); do
  case $state in
    JobState=PENDING|JobState=RUNNING|JobState=CONFIGURING|JobState=COMPLETING|JobState=SUSPENDED) sleep 1 ;;
    *) break ;;
  esac
done
echo "merge job $merge ended: ${state#JobState=} ($out/merge.log)"
[ "$state" = JobState=COMPLETED ]
