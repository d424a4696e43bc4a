"""What a run writes beside each snapshot once it is in place: GADGET-4's on-the-fly
analyses (``output.power_spectrum``, GADGET-4's ``POWERSPEC_ON_OUTPUT``;
``output.halos``, GADGET-4's ``FOF`` with its catalogue at every output), the same files
as ``hybridtree pk`` and ``hybridtree halos`` write from that snapshot."""

from __future__ import annotations

from pathlib import Path

from ..io.snapshot import atomic_path, resolve_snapshot

__all__ = ["power_name", "write_products"]


def power_name(stem: str) -> str:
    """The power spectrum's file beside snapshot ``stem``: ``powerspec_NNNN.txt``."""
    return stem.replace("snapshot", "powerspec", 1) + ".txt"


def write_products(folder: Path, stem: str, power: bool, halos: bool,
                   device: str | None = None) -> list[Path]:
    """The files beside the snapshot ``folder/stem`` (a file or a multi-file set, read
    back whole): its P(k) as ``powerspec_NNNN.txt`` (``power``; :func:`.power.snapshot_power`
    with ``hybridtree pk``'s defaults) and its FOF catalogue as ``fof_tab_NNN.hdf5``
    (``halos``; :func:`.halos.find_halos` with ``hybridtree halos``' defaults: b = 0.2, at
    least 20 particles).  P(k) on ``device`` (the run's; :func:`.power_device.analysis_runtime`),
    the halos linked there too where it is a GPU.
    Each is written complete or not at all; returns their paths.
    Raises OSError, SnapshotError or another user error of the readers."""
    path = resolve_snapshot(folder / stem)
    made = []
    if power:
        from .power import power_table, snapshot_power
        from .power_device import analysis_runtime
        ps, snap = snapshot_power(path, runtime=analysis_runtime(device))
        final = folder / power_name(stem)
        tmp = atomic_path(final)
        try:
            tmp.write_text(power_table(ps, snap, path.name))
            tmp.replace(final)
        finally:
            tmp.unlink(missing_ok=True)
        made.append(final)
    if halos:
        from .halos import find_halos, write_catalogue
        from .power_device import analysis_runtime
        rt = analysis_runtime(device)
        # linked on the run's device where it is a GPU (the same groups: cl/fof.cl); on a
        # CPU device the host's k-d trees are faster (hybridtree.analysis.halos.fof_device)
        rt = rt if rt is not None and rt.info.kind == "gpu" else None
        made.append(write_catalogue(folder, find_halos(path, runtime=rt), path, overwrite=True))
    return made
