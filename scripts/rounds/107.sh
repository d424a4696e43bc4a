# round 107: issue 30, session 28: the cusp's inner 14 % / 51 % (about bins >= 5 / >= 4 of the block run) as a block substep
# (tree of all N, built or refitted) and as a force of a tree of those particles alone (hierarchical time steps)
HYBRIDTREE_DEVICE=nvidia py subset 200 scripts/tune/subset.py 4194304 0.14 0.51
HYBRIDTREE_DEVICE=nvidia py subset_rel 200 scripts/tune/subset.py 4194304 0.14 0.51 --alpha 0.003
