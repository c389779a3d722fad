#!/usr/bin/env bash
# The merge after a kvscope sweep's array (submitted with
# --dependency=afterok on it): every shard's file into OUT/results.jsonl and
# the reports one run would write, OUT/results.json (and .csv, .png where the
# command writes them).
#   sbatch --dependency=afterok:ARRAY_JOB merge_task.sh KVSCOPE OUT COMMAND
#SBATCH --job-name=kvscope-merge
#SBATCH --ntasks=1
set -euo pipefail
kvscope=$1 out=$2 command=$3
reports=(--json "$out/results.json")
case $command in
  needle) reports+=(--csv "$out/results.csv" --plot "$out/results.png") ;;
  eval) reports+=(--csv "$out/results.csv") ;;
esac
exec "$kvscope" merge "$out/results.jsonl" "$out"/shard-*-of-*.jsonl "${reports[@]}"
