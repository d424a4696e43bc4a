# round 97: issue 30, session 27: round 96's windowed walk was 5-9 x slower; a sparse active walk is set by its longest walks:
# the cooperative list walk (COOP work-items per group, the relative walk's) for geometric active walks, merged and not;
# the relative criterion's substeps (COOP = 32 already), merged and not
for c in 32 16; do HYBRIDTREE_DEVICE=nvidia py substep_2pc_coop$c 150 scripts/tune/substep.py 4194304 0.02 \
    --active-options COOP=$c --merge 1,0,1 8,32,2.05 8,64,2.05 16,64,2.05; done
HYBRIDTREE_DEVICE=nvidia py substep_01pc_coop32 90 scripts/tune/substep.py 4194304 0.001 --active-options COOP=32 \
    --merge 1,0,1 8,64,2.05
HYBRIDTREE_DEVICE=nvidia py substep_2pc_rel 150 scripts/tune/substep.py 4194304 0.02 --alpha 0.003 \
    --merge 1,0,1 8,32,2.05 8,64,2.05 16,64,2.05
HYBRIDTREE_DEVICE=nvidia py substep_01pc_rel 90 scripts/tune/substep.py 4194304 0.001 --alpha 0.003 --merge 1,0,1 8,64,2.05
HYBRIDTREE_DEVICE=nvidia py substep_2pc_coop32_prof 90 scripts/tune/substep.py 4194304 0.02 --active-options COOP=32 \
    --merge 8,64,2.05 --profile
