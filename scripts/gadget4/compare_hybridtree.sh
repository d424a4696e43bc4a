#!/usr/bin/env bash
# hybridtree on GADGET-4's initial conditions, and the power spectra of both codes' snapshots.
#   bash scripts/gadget4/compare_hybridtree.sh ICS GADGET_OUTPUT OUT [STEPS] [DEVICE] [--set ...]
# ICS: GADGET-4's IC snapshot (snapshot_ics_000.hdf5, NGENIC); GADGET_OUTPUT: the folder of
# its run (snapshot_001..003 at z = 9, 1, 0), or - to skip it; OUT: where hybridtree's run and the P(k)
# tables go.  The softening is GADGET's (L/N)/30 comoving; N, L and h are read from the
# ICs.  P(k) of both by `hybridtree pk` (TSC, interlaced, a mesh of 2 N).
set -euo pipefail
ICS=$1; G4=$2; OUT=$3; STEPS=${4:-128}; DEVICE=${5:-}; shift $(( $# < 5 ? $# : 5 ))
N=$(python3 -c "import h5py,sys; print(round(int(h5py.File(sys.argv[1])['Header'].attrs['NumPart_Total'][1]) ** (1/3)))" "$ICS")
# (L/N)/30 comoving, L = the ICs' BoxSize in Mpc/h, into comoving Mpc (internal units: Mpc)
EPS=$(python3 -c "import h5py,sys; f = h5py.File(sys.argv[1]); print(float(f['Header'].attrs['BoxSize']) / float(f['Parameters'].attrs['HubbleParam']) / $N / 30)" "$ICS")
mkdir -p "$OUT"
t0=$(date +%s.%N)
python3 -m hybridtree run configs/cosmo_box_small.toml ${DEVICE:+--device "$DEVICE"} --overwrite \
    --set ics.kind=box_file --set ics.file="$ICS" --set gravity.eps="$EPS" \
    --set cosmology.steps="$STEPS" --set output.redshifts="9, 1, 0" --set output.dir="$OUT/run" "$@" \
    > "$OUT/run.txt"
t1=$(date +%s.%N)
echo "hybridtree run: N=$N^3 steps=$STEPS wall $(python3 -c "print(round($t1 - $t0, 1))") s" | tee "$OUT/walltime.txt"
for k in 1 2 3; do
    python3 -m hybridtree pk "$OUT/run/snapshot_000$k.hdf5" --mesh $((2 * N)) --out "$OUT/pk_hybridtree_$k.txt"
    [ "$G4" = "-" ] || python3 -m hybridtree pk "$G4/snapshot_00$k.hdf5" --mesh $((2 * N)) \
        --out "$OUT/pk_gadget4_$k.txt"
done
