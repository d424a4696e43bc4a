# round 139: issue 56, session 34: the merged code (float32 parts written in place by the walk, the tree's keys and
# the GPU's reduction rows let go, large list batches per walk, the drawn model block by block) against acf8aa7
# (build/old, the session's start): the snapshots of tools/same_snapshots.py bit for bit on the GPU; whole steps
# new against old, alternating; billion.py at 2^24 and 2^28 (memory by owner, step, force error)
code old
py snaps_old 100 tools/same_snapshots.py record "$O/snaps_old.json" --device nvidia
code new
py snaps_new 100 tools/same_snapshots.py record "$O/snaps_new.json" --device nvidia
py snaps_compare 20 tools/same_snapshots.py compare "$O/snaps_old.json" "$O/snaps_new.json"
k=0
for v in new old new old; do code $v
  py runs_$v$((++k)) 45 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono \
      --steps 32 --diag-every 8
done
code new
py billion 200 scripts/bench/billion.py --device nvidia --n 16777216 268435456 --steps 8 --sample 1000 \
    --timeout 190 --json "$O/billion.json"
