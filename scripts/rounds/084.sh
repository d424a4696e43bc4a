# round 84: issue 30, session 25 (round 83's code): the paper's cosmological sphere at alpha = 0.003; the relative walk's rate
# against the geometric one at alpha = 0.003; a substep of 2 % active (geometric, refitted and built)
py cosmo_sphere 220 scripts/bench/cosmo.py configs/cosmo_sphere.toml --device nvidia --out /tmp/cs \
    --json "$D/cosmo_sphere.json"
py rate 150 scripts/tune/relative.py --device nvidia --n 4194304 16777216 --theta 0.5 --alpha 0.003
HYBRIDTREE_DEVICE=nvidia py substep_2pc 60 scripts/tune/substep.py 4194304 0.02
