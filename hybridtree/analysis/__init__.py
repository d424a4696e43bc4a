"""What a run's output tells: diagnostics, plots, ``hybridtree info``, the ``bench``
command, friends-of-friends halos and mass functions."""
