# round 54: issue 31, session 19: hybridtree's own convergence on GADGET-4's 64^3 ICs (.device/g4, carried): theta, mesh, split, rcut,
# steps; P(k) of each, z = 0 positions of two back for halo profiles against GADGET-4's snapshot
ICS=$PWD/.device/g4/snapshot_ics_000.hdf5
run_ht() { local name=$1 steps=$2; shift 2; echo "== ht_$name" >> "$O/index.txt"; local t0=$(date +%s)
  timeout 200 bash scripts/gadget4/compare_hybridtree.sh "$ICS" - "$D/ht_$name" "$steps" nvidia "$@" > "$D/ht_$name.txt" 2>&1
  echo "   rc=$? $(( $(date +%s) - t0 )) s" >> "$O/index.txt"; }
run_ht 512 512
run_ht tight 1024 --set gravity.theta=0.25 --set gravity.softening=spline --set gravity.pm_grid=128 --set gravity.rcut=9
run_ht 512_pm128 512 --set gravity.pm_grid=128
run_ht 512_theta025 512 --set gravity.theta=0.25
run_ht 512_asmth2 512 --set gravity.asmth=2
run_ht 512_rcut45 512 --set gravity.rcut=4.5
for v in 512 tight; do python - "$D/ht_$v/run/snapshot_0003.hdf5" "$O/ht_${v}_z0.hdf5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1]) as f, h5py.File(sys.argv[2], "w") as g:
    for name in f:
        if not name.startswith("PartType"):
            f.copy(name, g)
    for a, v in f.attrs.items():
        g.attrs[a] = v
    for t in [n for n in f if n.startswith("PartType")]:
        p = g.create_group(t)
        for name in ("Coordinates", "ParticleIDs", "Masses"):
            if name in f[t]:
                f.copy(f"{t}/{name}", p)
PY
done
rm -f "$D"/ht_*/run/*.hdf5
