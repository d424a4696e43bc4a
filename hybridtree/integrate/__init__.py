"""Time integration: the run state (host or device backend), the schemes (leapfrog, the
hybrid tree's nested hard/soft steps, block steps), time bins, the schedule of steps."""
