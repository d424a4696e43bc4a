# round 108: issue 30, session 29: where a 2 % relative substep's time goes now (profile), and each cell_moments launch's time
py kernels 200 scripts/tune/kernels.py --device nvidia --n 4194304 --steps 8 --sequence cell_moments
HYBRIDTREE_DEVICE=nvidia py substep_rel 200 scripts/tune/substep.py 4194304 0.02 5 --alpha 0.003 --profile
HYBRIDTREE_DEVICE=nvidia py substep_rel_01 200 scripts/tune/substep.py 4194304 0.001 5 --alpha 0.003 --profile
