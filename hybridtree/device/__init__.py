"""The OpenCL device: runtime and device choice, the probe, kernel builds and launches,
host <-> device transfers, deterministic reductions, the clock of device work."""
