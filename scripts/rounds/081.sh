# round 81: issue 30, session 24, the relative walks with COOP = 32: block against shared steps on the cusp at 2^22; a substep
# of 2 % active; groups of 128 against 256 at 2^24; the paper's cosmological sphere if time is left
py steps_4m 220 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
    --shared-from 5 --refit-fraction 0 --json "$D/steps_4m.json"
HYBRIDTREE_DEVICE=nvidia py substep_2pc 60 scripts/tune/substep.py 4194304 0.02
py groups 100 scripts/tune/relative.py --device nvidia --n 16777216 --models plummer --theta 0.5 --alpha 0.002 0.003 \
    --n-group 128 256
[ $(( $(date +%s) - T0 )) -lt 320 ] && py cosmo_sphere 220 scripts/bench/cosmo.py configs/cosmo_sphere.toml \
    --device nvidia --out /tmp/cs --json "$D/cosmo_sphere.json"
