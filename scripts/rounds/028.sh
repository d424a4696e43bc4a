# round 28: issue 20: cosmic variance of the z = 0 mass function: the same sphere, seeds 2 and 3
for seed in 2 3; do
  py cosmo_seed$seed 290 scripts/bench/cosmo.py configs/cosmo_sphere.toml --device nvidia \
      --out /tmp/cs$seed --set ics.seed=$seed --json "$D/cosmo_sphere_seed$seed.json"
done
