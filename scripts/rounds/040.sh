# round 40: issue 30: the cost/accuracy curve for the defaults (2^20..2^24, both orders, a z = 0 snapshot), 32-step runs with jz-fmm
py cosmo_small 200 -m hybridtree run configs/cosmo_small.toml --set output.dir=/tmp/csm --set gravity.device=nvidia --quiet
Z0=$(ls /tmp/csm/snapshot_*.hdf5 | tail -1); echo "z=0 snapshot: $Z0" >> "$O/index.txt"
py errors 300 scripts/bench/timesteps.py errors --device nvidia --n 1048576 4194304 16777216 --theta 0.5 0.6 \
    --alpha 0.002 0.003 0.005 --snapshot "$Z0" --snap-eps 0.04 --json "$D/errors.json"
for m in monopole quadrupole; do py openings_$m 200 scripts/bench/timesteps.py openings --device nvidia \
    --n 4194304 16777216 --theta 0.5 --alpha 0.002 0.003 0.005 --multipole $m --json "$D/openings_$m.json"; done
