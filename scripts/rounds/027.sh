# round 27: issue 20: the oct-tree paper's cosmological sphere end to end (ICs, 3584 steps, halos, plots)
py cosmo_sphere 590 scripts/bench/cosmo.py configs/cosmo_sphere.toml --device nvidia \
    --out /tmp/cs --json "$D/cosmo_sphere.json"
cp /tmp/cs/diagnostics.csv "$D/cosmo_sphere_diagnostics.csv"; cp /tmp/cs/run.log "$D/"
cp /tmp/cs/*.png "$D/" 2>/dev/null; ls -la /tmp/cs > "$D/cs_ls.txt"
