# round 142: issue 57, session 35: a block substep's cost on the H200 at 2^22, main's code (build/old) against the
# branch w-subs (the end of a substep in one kernel and one wait; the interactions read in that wait): per substep
# and stage, launches, work-items, device ms and waits (scripts/tune/block_substeps.py, M31 of
# configs/galaxy_m31.toml, one largest step after one untimed); then the Pareto runs of rounds 133/136 cut down
# (M31: block eta 0.2 against shared dt/8; the cusp: block eta 0.2 and 0.05 against shared dt/4 and dt/16),
# old and new alternating, and the new code's block runs with more refits (gravity.refit_fraction 0.05, the
# default, 0.25 and 1: a substep of bins 4-5, 3-10 % active, builds a tree of all N under 0.05).
# About 6-7 minutes of GPU time (the caps add up to 11.5).
export HYBRIDTREE_DEVICE=nvidia
code new
# the GPU's one-kernel end of a substep against the three kernels apart, bit for bit; its one wait
py pytest_fused 60 -m pytest -q -p no:cacheprovider -n 0 --tb=short tests/integrate/test_block_steps.py \
    -k "fused or waits_once"
code old
py substeps_old 45 scripts/tune/block_substeps.py --device nvidia --n 4194304 --json "$O/substeps_old.json"
code new
py substeps_new 45 scripts/tune/block_substeps.py --device nvidia --n 4194304 --json "$O/substeps_new.json"
py substeps_new_refit1 45 scripts/tune/block_substeps.py --device nvidia --n 4194304 \
    --set gravity.refit_fraction=1 --json "$O/substeps_new_refit1.json"
k=0
for v in old new old new; do code $v
  py m31_$v$((++k)) 75 scripts/bench/pareto.py m31 --device nvidia --n 4194304 --seed 2 --eta 0.2 \
      --shared 3 --ref 4 --json "$O/m31_$v$k.jsonl"
done
k=0
for v in old new; do code $v
  py cusp_$v$((++k)) 45 scripts/bench/pareto.py cusp --device nvidia --n 4194304 --eta 0.2 0.05 \
      --shared 2 4 --ref 5 --json "$O/cusp_$v$k.jsonl"
done
code new
py m31_refits 100 scripts/bench/pareto.py m31 --device nvidia --n 4194304 --seed 2 --eta 0.2 \
    --refit 0.05 0.25 1 --shared 3 --ref 4 --json "$O/m31_refits.jsonl" --plot "$O/m31_refits.png"
