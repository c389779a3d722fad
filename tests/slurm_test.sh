#!/usr/bin/env bash
# A sweep spread over a Slurm array (tools/slurm/submit.sh) on a one-node
# Slurm started here: munge and slurmctld/slurmd of Debian's slurm-wlm, their
# configuration, keys, sockets, state and logs in a temporary folder,
# localhost only, stopped at the end whatever happens. A needle sweep of
# llama-debian-5m on lavapipe as a 3-task array and its merge must equal one
# run of the same sweep: JSON, CSV and plot.
#   slurm_test.sh KVSCOPE
# Exit 77 (ctest: skipped) where Slurm or munge is not installed or this is
# not root (munged and slurmd run as the user that starts them, and slurmd
# must be able to run jobs as the submitting user).
set -u
kvscope=$(realpath "$1")
repo=$(cd "$(dirname "$0")/.." && pwd)
for tool in munged slurmctld slurmd sbatch sinfo; do
  command -v $tool >/dev/null || { echo "SKIP: $tool is not installed (tools/setup.sh --tests installs Slurm and munge)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: the one-node Slurm runs as root"; exit 77; }

work=$(mktemp -d)
chmod 700 "$work"
stop() {
  for pid_file in "$work"/slurmd.pid "$work"/slurmctld.pid "$work"/munged.pid; do
    [ -s "$pid_file" ] && kill "$(cat "$pid_file")" 2>/dev/null
  done
  sleep 1
  for pid_file in "$work"/slurmd.pid "$work"/slurmctld.pid "$work"/munged.pid; do
    [ -s "$pid_file" ] && kill -KILL "$(cat "$pid_file")" 2>/dev/null
  done
  rm -rf "$work"
}
trap stop EXIT
fail() {
  echo "FAIL: $*"
  for log in "$work"/*.log "$work"/out/*.log; do [ -f "$log" ] && { echo "--- $log"; tail -20 "$log"; }; done
  exit 1
}

# munge: a key, a socket and a pid file of our own.
dd if=/dev/urandom of="$work/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge.key"
munged --force --key-file="$work/munge.key" --socket="$work/munge.sock" --pid-file="$work/munged.pid" \
       --log-file="$work/munged.log" --seed-file="$work/munged.seed" || fail "munged did not start"

# Ports above 16000 picked from this process's id, so that two runs side by side do not meet.
port=$(( 16000 + ($$ % 2000) * 2 ))
cpus=$(nproc)
memory=$(( $(free -m | awk '/^Mem:/ {print $2}') * 3 / 4 ))
mkdir -p "$work/state" "$work/spool" "$work/out"
cat >"$work/slurm.conf" <<EOF
ClusterName=kvscope-test
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge.sock
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=1
ReturnToService=2
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=kvscope-node NodeAddr=127.0.0.1 NodeHostname=localhost CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=test Nodes=kvscope-node Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$work/slurm.conf
slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start"
slurmd -f "$SLURM_CONF" -N kvscope-node || fail "slurmd did not start"
for _ in $(seq 60); do
  sinfo -h -o %T 2>/dev/null | grep -q idle && break
  sleep 0.5
done
sinfo -h -o %T 2>/dev/null | grep -q idle || fail "the node is not idle: $(sinfo 2>&1 | tail -2)"
echo "ok: a one-node Slurm answers (sinfo: $(sinfo -h -o '%P %D %T %c'))"

# A task a shard, one CPU each on lavapipe, the merge after them.
sweep=(needle --model "$repo/assets/models/llama-debian-5m" --lengths 112,120,128 --depths 0.5 --methods dense,quest --budgets 16)
export MESA_SHADER_CACHE_DIR=${MESA_SHADER_CACHE_DIR:-$work/mesa-cache}
LP_NUM_THREADS=1 bash "$repo/tools/slurm/submit.sh" --shards 3 --gpus-per-task 0 --out "$work/out" --wait --kvscope "$kvscope" \
     --sbatch "--cpus-per-task=1 --time=10" -- "${sweep[@]}" || fail "the array or its merge failed"
for i in 1 2 3; do [ -s "$work/out/shard-$i-of-3.jsonl" ] || fail "shard $i/3 wrote no results"; done
echo "ok: a 3-task array job and its merge"

"$kvscope" "${sweep[@]}" --json "$work/one.json" --csv "$work/one.csv" --plot "$work/one.png" >/dev/null ||
  fail "the single run failed"
# The merge names the same model path; the single run's is the same absolute path.
cmp "$work/one.json" "$work/out/results.json" || fail "the merged JSON is not the single run's"
cmp "$work/one.csv" "$work/out/results.csv" || fail "the merged CSV is not the single run's"
cmp "$work/one.png" "$work/out/results.png" || fail "the merged plot is not the single run's"
echo "ok: the merged JSON, CSV and plot are the single run's"
echo "slurm: passed"
