# round 98: issue 30, session 27: sparse active walks take COOP work-items per group (SPARSE_WALK, below 25 % of the groups):
# the GPU tests; the crossover in the share of groups walked (COOP = 32 against the serial walk, geometric); where the
# relative criterion's 2 % substep goes, and its active walk's COOP width
HYBRIDTREE_DEVICE=nvidia py tests_gpu 240 -m pytest -q -p no:cacheprovider tests/gravity/test_treewalk.py \
    tests/gravity/test_opening.py tests/integrate/test_timesteps.py tests/cosmo/test_box_block_steps.py \
    tests/gravity/test_refit.py
for f in 0.001 0.003 0.005 0.01 0.02; do for c in 0 32; do HYBRIDTREE_DEVICE=nvidia py substep_${f}_coop$c 60 \
    scripts/tune/substep.py 4194304 $f --active-options COOP=$c; done; done
HYBRIDTREE_DEVICE=nvidia py substep_0.005_default 60 scripts/tune/substep.py 4194304 0.005
HYBRIDTREE_DEVICE=nvidia py substep_rel_prof 60 scripts/tune/substep.py 4194304 0.02 --alpha 0.003 --profile
for c in 16 64; do HYBRIDTREE_DEVICE=nvidia py substep_rel_coop$c 60 scripts/tune/substep.py 4194304 0.02 --alpha 0.003 \
    --active-options COOP=$c; done
