"""hybridtree as an AMUSE gravity code (docs/amuse.md): ``from hybridtree.amuse import
Hybridtree``.  AMUSE (``pip install 'hybridtree[amuse]'``) is imported only when
``Hybridtree`` or ``HybridtreeInterface`` is asked for, so that hybridtree imports
without it."""

__all__ = ["Hybridtree", "HybridtreeInterface"]


def __getattr__(name: str):
    if name in __all__:
        try:
            from . import interface
        except ImportError as exc:
            if (exc.name or "").split(".")[0] != "amuse":
                raise
            raise ImportError(f"hybridtree.amuse.{name} needs AMUSE ({exc}): "
                              f"pip install 'hybridtree[amuse]' (docs/amuse.md)") from exc
        return getattr(interface, name)
    raise AttributeError(f"module 'hybridtree.amuse' has no attribute {name!r}")
