# round 150: issue 56, session 36: round 149's 1024^3 box again (it ran: 124 713 MiB, 7.72 s a step), its P(k)
# now on the compact mesh (the float64 P(k) of 2^30 particles failed: 96 bytes a particle, not 48), the step's
# stages by the run's clock
code new
py box1024_f32 560 scripts/bench/box_billion.py --device nvidia --grid 1024 --steps 8 --timeout 440 \
    --set memory.mesh=float32 --set memory.velocities=float32 --json "$O/box1024_f32.json"
