# round 118: issue 30, session 30: GOTHIC's M31 at 2^23 for 49.5 Myr (round 63's run) with the new refit rule (a force of
# some refits while the forces on refits since the build, its own included, stay within f N) at f = 0, 0.05
# (the new default), 0.1; the cusp's block run at 2^22 with f = 0 and the default (its deepest bin holds 14 %)
for f in 0.05 0 0.1; do
  py m31_23_f$f 200 scripts/bench/galaxy.py configs/galaxy_m31.toml --n 8388608 --t-end 10.5 --device nvidia \
      --set gravity.refit_fraction=$f --out /tmp/m31_23r --json "$D/m31_23_f$f.json"
done
for f in 0 0.05; do
  py steps_4m_f$f 150 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
      --shared-from 99 --refit-fraction $f --json "$D/steps_4m_f$f.json"
done
