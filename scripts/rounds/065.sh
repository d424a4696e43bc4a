# round 65: issue 30, session 21: blocking reads and the device's idle gaps in a step, host cost per launch; cProfile of the host
py kernels 200 scripts/tune/kernels.py --device nvidia --n 4194304 --steps 8 --json "$D/kernels.json"
py cprofile 200 scripts/tune/kernels.py --device nvidia --n 4194304 --steps 8 --cprofile
