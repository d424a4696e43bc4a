# round 43: issue 30, session 15: do the longest group walks set walk_lists's time (a visit cap), and what theta_min costs in accuracy
for tm in 0.25 0.35 0.5; do py rel_tm$tm 200 scripts/tune/relative.py --device nvidia --n 4194304 --theta 0.5 \
    --alpha 0.002 --theta-min $tm --variants "" $( [ $tm = 0.25 ] && echo MAX_VISITS=1000 MAX_VISITS=2000 MAX_VISITS=4000 MAX_VISITS=8000 ); done
py errors 300 scripts/bench/timesteps.py errors --device nvidia --n 4194304 --theta 0.5 --alpha 0.002 0.003 \
    --theta-min 0.25 0.35 0.5 --json "$D/errors.json"
