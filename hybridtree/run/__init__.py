"""One run: the :class:`~.simulation.Simulation` object (when to step, report, write,
stop), its output, its set-up from a config, its folder, its processes, its guards."""
