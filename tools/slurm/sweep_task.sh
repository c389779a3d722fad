#!/usr/bin/env bash
# One task of a kvscope sweep's Slurm array: shard (task id + 1) of the
# array's task count, its cells appended to OUT/shard-I-of-N.jsonl as they
# finish. --resume, so that a task requeued after a preemption or a time limit
# runs only the cells its file lacks.
#   sbatch --array=0-(N-1) sweep_task.sh KVSCOPE OUT COMMAND [ARGS...]
#SBATCH --job-name=kvscope-sweep
#SBATCH --ntasks=1
#SBATCH --requeue
set -euo pipefail
kvscope=$1 out=$2
shift 2
: "${SLURM_ARRAY_TASK_ID:?run this as a task of an array job (sbatch --array)}"
count=${SLURM_ARRAY_TASK_COUNT:-$(( SLURM_ARRAY_TASK_MAX + 1 ))}
index=$(( SLURM_ARRAY_TASK_ID + 1 ))
exec "$kvscope" "$@" --results "$out/shard-$index-of-$count.jsonl" --shard "$index/$count" --resume
