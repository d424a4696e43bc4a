# round 116: issue 30, session 29, final code: the oct-tree paper's cosmological sphere end to end (energy error at z = 0, time)
py cosmo_sphere 300 scripts/bench/cosmo.py configs/cosmo_sphere.toml --device nvidia --out /tmp/cs \
    --json "$D/cosmo_sphere.json"
