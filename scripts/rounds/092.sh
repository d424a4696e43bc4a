# round 92: issue 30, session 26: block runs on the cusp refitting between builds (refit_fraction 0.25 ... 2), now that the list
# room no longer swings; building every substep twice for the scatter
i=0; for f in 0 0.25 0.5 1 2 0; do i=$((i + 1)); py steps_4m_${i}_f$f 100 scripts/bench/timesteps.py steps --device nvidia \
    --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 --shared-from 6 --refit-fraction $f --json "$D/steps_4m_${i}_f$f.json"; done
