# round 13: session 6: the issue 6 table in one run with the new defaults; hybrid steps re-measured
py dbg 80 dbg_gpu.py nvidia     # a one-off script (not kept): list walk against the SIMD walk, per LBUF
py bench_gpu 330 scripts/bench/force.py --targets --device nvidia --cpu-device cpu --peer-cuda --json "$D/bench_gpu.json"
py hybrid_1m 100 scripts/bench/step.py hybrid --n 1000000 --device nvidia --t-end 0.0625 --json
