"""Input and output: snapshots (GADGET-style HDF5), diagnostics files, logs."""
