# round 149: issue 56, session 36: the 1024^3 periodic box (TreePM, 2LPT at z = 49) on one H200 with the float32
# mesh and float32 velocities (the merged ICs made a few planes at a time, the FFT's tuning filling local memory);
# 512^3 first (the same code's smaller box), then 1024^3: 8 steps, memory by owner, P(k) at the last step
code new
py box512_f32b 110 scripts/bench/box_billion.py --device nvidia --grid 512 --steps 8 --timeout 100 \
    --set memory.mesh=float32 --set memory.velocities=float32 --json "$O/box512_f32b.json"
py box1024_f32 450 scripts/bench/box_billion.py --device nvidia --grid 1024 --steps 8 --timeout 420 \
    --set memory.mesh=float32 --set memory.velocities=float32 --json "$O/box1024_f32.json"
