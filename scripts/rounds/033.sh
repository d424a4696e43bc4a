# round 33: issue 21: theta_min against the relative walk's tail; tree refits in the block steps at 2^22 (refits and --rebuild were removed after this round: docs/history.md §11)
py openings 250 scripts/bench/timesteps.py openings --device nvidia --n 4194304 --theta 0.5 --alpha 0.0005 0.002 --theta-min 0.01 0.25 0.35 --json "$D/openings.json"
py errors 200 scripts/bench/timesteps.py errors --device nvidia --n 4194304 --theta 0.5 --alpha 0.0005 0.001 0.002 --json "$D/errors.json"
for rb in 0.5 1.0; do py steps_4m_$rb 200 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 0.4 --rebuild $rb --shared-from 6 --json "$D/steps_4m_$rb.json"; done
