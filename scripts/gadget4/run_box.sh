#!/usr/bin/env bash
# Run one GADGET-4 periodic TreePM DM-only box: N^3 particles in 100 Mpc/h, z=49 -> 0, outputs at z=49(ICs),9,1,0.
#
#   scripts/gadget4/run_box.sh N [RUN_DIR] [NP]
#
#   N       particles per dimension (64, 128, 256); the executable used is $G4_ROOT/build$N/Gadget4
#           (compiled with PMGRID=NGENIC=N; build.sh N builds it -- run_box calls it if missing)
#   RUN_DIR default $G4_ROOT/run$N        (G4_ROOT defaults to /tmp/gadget4)
#   NP      MPI ranks, default 2
#   OPENING=relative [ERRTOL=0.005] (environment): GADGET-4's relative opening criterion
#           (TypeOfOpeningCriterion 1) instead of the template's geometric theta = 0.7, whose
#           forces are ~10 % weak on near-uniform boxes (README.md)
#   INTACC=0.025 (environment): ErrTolIntAccuracy, the time-step criterion's eta
#   TLIMIT=86400 (environment): TimeLimitCPU in seconds; GADGET-4 stops at 0.85 of it with
#           restart files (device_run.sh continues such a run with RestartFlag 1)
#   BOX=100 (environment): the box side in Mpc/h (the softening follows: (BOX/N)/30); e.g.
#           64^3 in 50 Mpc/h has the mass resolution of 128^3 in 100 Mpc/h at 1/8 of the cost
#
# Steps:  1) writes param.txt (from param_box64.txt: GridSize=NSample=N, softening=(100/N)/30, MaxMemSize)
#            plus param_ics.txt (same, OutputDir ./ics) and outputs.txt
#         2) IC only:  mpirun Gadget4 param_ics.txt 6   -> ics/snapshot_ics_000.hdf5   (RestartFlag 6 = create ICs)
#         3) full run: mpirun Gadget4 param.txt         -> output/ (snapshot_00[0-3].hdf5, fof_tab_*, powerspecs/, cpu.txt, timings.txt)
#            (NGENIC regenerates exactly the same ICs at start-up; snapshot_000 at a=0.02 is those ICs again)
# Prints the wall-clock time of each step; also stored in RUN_DIR/walltime.txt.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
G4_ROOT=${G4_ROOT:-/tmp/gadget4}
N=${1:?usage: run_box.sh N [RUN_DIR] [NP]}
RUN=${2:-$G4_ROOT/run$N}
NP=${3:-2}
EXE=$G4_ROOT/build$N/Gadget4
[[ -x $EXE ]] || "$HERE/build.sh" "$N"
[[ -x $EXE ]] || { echo "run_box.sh: no executable $EXE" >&2; exit 1; }

mkdir -p "$RUN"
cd "$RUN"
BOX=${BOX:-100}
SOFT=$(python3 -c "print('%.10f' % ($BOX/$N/30.0))")
MEM=$(python3 -c "print(min(9000, max(2000, int(1000*($N/128.0)**3))))")   # MByte per rank (GADGET-4 reserves it all at start-up; 256^3 -> 8000)
sed -e "s/^GridSize .*/GridSize                  $N/" \
    -e "s/^NSample .*/NSample                   $N/" \
    -e "s/^BoxSize .*/BoxSize                   $BOX             % Mpc\/h/" \
    -e "s/^SofteningComovingClass0 .*/SofteningComovingClass0   $SOFT     % = ($BOX\/$N)\/30 Mpc\/h comoving/" \
    -e "s/^SofteningMaxPhysClass0 .*/SofteningMaxPhysClass0    $SOFT/" \
    -e "s/^MaxMemSize .*/MaxMemSize                $MEM/" \
    "$HERE/param_box64.txt" > param.txt
if [[ ${OPENING:-geometric} == relative ]]; then
    sed -i -e "s/^TypeOfOpeningCriterion .*/TypeOfOpeningCriterion    1/" \
           -e "s/^ErrTolForceAcc .*/ErrTolForceAcc            ${ERRTOL:-0.005}/" param.txt
fi
sed -i -e "s/^ErrTolIntAccuracy .*/ErrTolIntAccuracy         ${INTACC:-0.025}/" \
       -e "s/^TimeLimitCPU .*/TimeLimitCPU              ${TLIMIT:-86400}/" param.txt
sed -e "s#^OutputDir .*#OutputDir            ./ics#" param.txt > param_ics.txt
cp "$HERE/outputs.txt" outputs.txt
cp "$G4_ROOT/build$N/Config.sh" Config-used.sh

MPIRUN=(mpirun --allow-run-as-root -np "$NP")
t0=$(date +%s.%N)
"${MPIRUN[@]}" "$EXE" param_ics.txt 6 > log_ics.txt 2>&1
t1=$(date +%s.%N)
"${MPIRUN[@]}" "$EXE" param.txt > log.txt 2>&1
t2=$(date +%s.%N)
python3 - "$t0" "$t1" "$t2" "$N" "$NP" <<'PY' | tee walltime.txt
import sys
t0, t1, t2 = map(float, sys.argv[1:4]); n, np_ = sys.argv[4:6]
print(f"N={n}^3 NP={np_}  IC generation (RestartFlag 6) wall = {t1-t0:.1f} s")
print(f"N={n}^3 NP={np_}  full run z=49->0 wall            = {t2-t1:.1f} s")
PY
