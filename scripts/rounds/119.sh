# round 119: issue 30, session 30: the refit rule's energy cost (round 118: M31 2^23, dE/E 8.9e-5 building every force,
# 1.25e-4 with f = 0.05): M31 at 2^22 with f = 0 and 0.05, and at 2^23 with alpha = 0.002 (f = 0.05 and 0)
for f in 0.05 0; do
  py m31_22_f$f 120 scripts/bench/galaxy.py configs/galaxy_m31.toml --n 4194304 --t-end 10.5 --device nvidia \
      --set gravity.refit_fraction=$f --out /tmp/m31_22r --json "$D/m31_22_f$f.json"
done
for f in 0.05 0; do
  py m31_23_a002_f$f 200 scripts/bench/galaxy.py configs/galaxy_m31.toml --n 8388608 --t-end 10.5 --device nvidia \
      --set gravity.refit_fraction=$f --set gravity.alpha=0.002 --out /tmp/m31_23r --json "$D/m31_23_a002_f$f.json"
done
