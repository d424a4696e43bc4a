# round 29: issue 20: an 8 times larger sphere (R = 90 Mpc, 22.6 M particles, 1024 steps) for the mass function
py cosmo_big 590 scripts/bench/cosmo.py configs/cosmo_sphere.toml --device nvidia --out /tmp/cb \
    --set ics.n_grid=352 --set ics.box=180.5 --set ics.radius=90.0 --set cosmology.steps=1024 \
    --set output.redshifts=0 --json "$D/cosmo_big.json"
cp /tmp/cb/diagnostics.csv "$D/cosmo_big_diagnostics.csv"; cp /tmp/cb/*.png "$D/" 2>/dev/null
