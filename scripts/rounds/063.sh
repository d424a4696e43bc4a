# round 63: issue 32 / 30, session 20: GOTHIC's M31 at 2^23 for 49.5 Myr with refitted trees between builds (gravity.refit_fraction):
# half the 1 Gyr run's stepping was tree builds (278 of 938 s); per smallest step against round 62's 0.0407 s (builds every force)
for f in 0.1 0.5; do
  py m31_23_refit_$f 130 scripts/bench/galaxy.py configs/galaxy_m31.toml --n 8388608 --t-end 10.5 --device nvidia \
      --set gravity.refit_fraction=$f --out /tmp/m31_23r --json "$D/m31_23_refit_$f.json"
done
