#!/usr/bin/env bash
# One batched measurement round on the GPU machine (the device tool's 30-minute budget
# wants one script per call).  Run from the repository root after .device/gpu-setup.sh:
#   bash scripts/gpu_round.sh ROUND [ARGS]   -> $OUT/results.tgz (every log) and $OUT/index.txt
#   bash scripts/gpu_round.sh custom ARGS    -> one `python ARGS` (580 s at most), logged the same way
#   DRY=1 bash scripts/gpu_round.sh ROUND    -> prints the round's commands instead of running them
# A round's commands are data: scripts/rounds/NNN.sh (NNN = ROUND, three digits), sourced here
# with the helpers below and this script's arguments ($2 ... are the round's own: rounds 42, 60).
# Older rounds are a record: their test paths and options are those of their day.
set -u
# (.device/wheels: ../shared/device/prepare.sh, then scripts/device_wheels.sh for reikna)
R=${1:-1}; T0=$(date +%s)
O=${OUT:-/tmp/out}; D=$(mktemp -d); mkdir -p "$O"
ROUNDS=$PWD/scripts/rounds
export PYTHONPATH=$PWD
# py NAME SECONDS ARGS...: `python ARGS` within SECONDS, its output in $D/NAME.txt and $OUT,
# its command, status and time in $OUT/index.txt
py() { local name=$1 t=$2; shift 2; echo "== $name: $*" >> "$O/index.txt"
       local t0=$(date +%s); timeout "$t" python "$@" > "$D/$name.txt" 2>&1
       echo "   rc=$? $(( $(date +%s) - t0 )) s" >> "$O/index.txt"; cp "$D/$name.txt" "$O/" 2>/dev/null; }
# code V: run the code before a change (build/old) for V = old, old1, ..., a second older
# commit (build/base) for V = base*, else the working tree
code() { case $1 in old*) export PYTHONPATH=$PWD/build/old;; base*) export PYTHONPATH=$PWD/build/base;;
         *) export PYTHONPATH=$PWD;; esac; }
# jz_wheels: the GPU peer jz-fmm from the wheels carried in .device/jz (the machine has no network)
jz_wheels() { python3 -m pip install -q --no-index --no-deps --root-user-action=ignore .device/jz/*.whl > /dev/null 2>&1; }
if [ -n "${DRY:-}" ]; then
  # print what would run: every command a round starts is one of these (cp, rm, mkdir and
  # the like act only on the temporary folder $D or on what a real run would have made)
  py() { local name=$1 t=$2 v e=; shift 2
         for v in HYBRIDTREE_DEVICE HYBRIDTREE_CL_OPTIONS HYBRIDTREE_READ_WAIT HYBRIDTREE_SORT_TUNING COOP PYTHONPATH; do
           [ -n "${!v:-}" ] && e="$e$v=${!v} "; done
         echo "py $name ${t}s: ${e}python $*"; }
  for c in python python3 mpiexec bash timeout nvidia-smi pkill lscpu sleep jz_wheels; do
    eval "$c() { echo \"$c \$*\"; }"
  done
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$D/gpu.txt" 2>&1
F=$ROUNDS/$( [[ $R =~ ^[0-9]+$ ]] && printf %03d "$((10#$R))" || echo "$R").sh
if [ -f "$F" ]; then
  . "$F"
elif [ $# -gt 1 ]; then   # not a recorded round: its arguments are one python command (as before)
  shift; py custom 580 "$@"
else
  echo "gpu_round.sh: no round $R: scripts/rounds/ lists the recorded rounds ('custom ARGS' runs one python command)" >&2
  rm -rf "$D"; exit 2
fi
if [ -n "${DRY:-}" ]; then rm -rf "$D"; exit 0; fi
tar czf "$O/results.tgz" -C "$D" .
