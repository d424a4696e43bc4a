# round 96: issue 30, session 27: round 95's merged list walks were 4-10 x slower (the longest walk sets walk_lists's time); the
# windowed group walk (KERNEL=tree_walk: walk and evaluation in one kernel, a work-group per group) for active walks,
# merged and not, against the list walk
HYBRIDTREE_DEVICE=nvidia py substep_2pc_tw 200 scripts/tune/substep.py 4194304 0.02 --active-options KERNEL=tree_walk \
    --merge 1,0,1 8,32,2.05 8,64,2.05 16,64,2.05 16,128,2.05
HYBRIDTREE_DEVICE=nvidia py substep_2pc 60 scripts/tune/substep.py 4194304 0.02
HYBRIDTREE_DEVICE=nvidia py substep_2pc_tw_prof 90 scripts/tune/substep.py 4194304 0.02 --active-options KERNEL=tree_walk \
    --merge 8,64,2.05 --profile
HYBRIDTREE_DEVICE=nvidia py substep_01pc_tw 90 scripts/tune/substep.py 4194304 0.001 --active-options KERNEL=tree_walk \
    --merge 1,0,1 8,64,2.05
