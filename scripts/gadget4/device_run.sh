#!/usr/bin/env bash
# Run (or continue) a GADGET-4 box on the GPU machine's CPU cores, from the package that
# pack_device.sh made, in slices that fit the machine's 10-minute calls:
#   bash scripts/gadget4/device_run.sh N WORK NP SECONDS
# The first call generates the ICs and starts the run in WORK/run$N; GADGET-4 stops at
# 0.85 x SECONDS of CPU time with restart files (TimeLimitCPU), and the next call with the same
# WORK continues it (RestartFlag 1).  Prints "DONE" once snapshot_003 (z = 0) is written.
# Environment as run_box.sh (OPENING, ERRTOL, INTACC).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
N=${1:?usage: device_run.sh N WORK NP SECONDS}; WORK=$2; NP=$3; SECONDS_LIMIT=$4
PKG=$(cd .device/g4pkg && pwd)
export LD_LIBRARY_PATH=$PKG/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if ! ldconfig -p | grep -q 'libmpi.so.40 '; then
    MPIBIN=$(dirname "$(command -v mpirun)")
    if [[ -e $MPIBIN/../lib/libmpi.so.40 ]]; then
        LD_LIBRARY_PATH=$(cd "$MPIBIN/../lib" && pwd):$LD_LIBRARY_PATH
    else
        LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$PKG/lib_mpi
    fi
fi
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
if ldd "$PKG/Gadget4" | grep 'not found'; then echo "device_run.sh: libraries missing" >&2; exit 1; fi
mkdir -p "$WORK/build$N"
cp "$PKG/Gadget4" "$PKG/Config.sh" "$WORK/build$N/"
RUN=$WORK/run$N
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [[ -e $RUN/output/restartfiles/restart.0 ]]; then
    cd "$RUN"
    t0=$(date +%s.%N)
    mpirun --allow-run-as-root -np "$NP" "$WORK/build$N/Gadget4" param.txt 1 >> log.txt 2>&1 || true
    echo "continued: wall $(python3 -c "import time; print(round(time.time() - $t0, 1))") s" | tee -a walltime.txt
else
    G4_ROOT=$WORK TLIMIT=$SECONDS_LIMIT bash "$HERE/run_box.sh" "$N" "$RUN" "$NP" || true
fi
grep '^Sync-Point' "$RUN/log.txt" | tail -1
[[ -e $RUN/output/snapshot_003.hdf5 ]] && echo DONE || echo "NOT DONE"
