# round 110: issue 30, session 29: substeps of the particles block steps make active (the largest |a|: the shortest time steps)
# on a Plummer sphere and the cusp, 1-3 %, against random ones; the refit's split_gather against split_sources +
# gather (build/old: a87a3fd), profiled, alternating
for c in "--alpha 0.003" ""; do t=$([ -n "$c" ] && echo rel || echo geo)
  for m in plummer cusp; do
    HYBRIDTREE_DEVICE=nvidia py subset_${m}_$t 150 scripts/tune/subset.py 4194304 0.01 0.02 0.03 --by acc --model $m \
        --no-alone $c
  done
done
for v in new1 old1 new2 old2; do code $v
  HYBRIDTREE_DEVICE=nvidia py substep_rel_prof_$v 60 scripts/tune/substep.py 4194304 0.02 --alpha 0.003 --profile
done
export PYTHONPATH=$PWD
for i in 1 2; do HYBRIDTREE_DEVICE=nvidia py substep_rel_$i 60 scripts/tune/substep.py 4194304 0.02 --alpha 0.003; done
