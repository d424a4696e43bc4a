# round 64: issue 30, session 21: device time of every kernel in a step (where the 2^22 step's time goes)
py kernels 300 scripts/tune/kernels.py --device nvidia --n 1048576 4194304 16777216 --steps 8 --json "$D/kernels.json"
py kernels_geo 120 scripts/tune/kernels.py --device nvidia --n 4194304 --steps 8 --set gravity.opening='"geometric"' --json "$D/kernels_geo.json"
py sort 120 scripts/tune/sort.py --device nvidia --n 1048576 4194304 16777216 --tuning 256,16,8,4 128,32,8,7
