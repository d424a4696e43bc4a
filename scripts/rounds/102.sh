# round 102: issue 30, session 28: where groups of 256 start to pay for the relative criterion (2^20, 2^21: the walk's time and
# the force errors), and the cusp's block run and shared steps with groups of 128 (the default below 2^23) and 256
py relative 200 scripts/tune/relative.py --device nvidia --n 1048576 2097152 --theta 0.5 --alpha 0.003 --n-group 128 256
py errors 200 -u scripts/bench/timesteps.py errors --device nvidia --n 1048576 2097152 --sample 1000 --theta 0.5 \
    --alpha 0.003 --orders monopole --n-group 128 256 --json "$D/errors.json"
for g in 128 256; do
  py steps_4m_g$g 170 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
      --shared-from 5 --refit-fraction 0 --set gravity.n_group=$g --json "$D/steps_4m_g$g.json"
done
