"""hybridtree's yt frontend: plain ``yt.load`` of hybridtree's snapshots and FOF catalogues.

yt (>= 4.2) imports every module named in the ``yt.frontends`` entry-point group before
it picks a dataset class (``yt/loaders.py``); installing hybridtree names this one
(setup.cfg), and importing it registers its two classes with yt:

- :class:`HybridtreeHDF5Dataset`, for a snapshot (a file whose ``Units`` group carries
  hybridtree's ``G_in_cgs``): yt's AREPO/GADGET reader with the file's units
  (``unit_base``) and, for open boundaries (``BoxSize`` 0), a non-periodic bounding cube
  around the particles (:func:`hybridtree.io.yt.unit_base_and_box`,
  :func:`hybridtree.io.yt.bounding_box`), so that plots have a domain and a ``unitary``
  unit.  A cosmological snapshot keeps GADGET's comoving units (``kpccm/h``, ``Msun/h``,
  velocities times sqrt(a)), h and the Ω's from its header; a matter-only one too (yt
  turns cosmology off where ``OmegaLambda`` is 0).
- :class:`HybridtreeFOFDataset`, for a catalogue ``fof_tab_NNN.hdf5`` that
  :func:`hybridtree.analysis.halos.write_catalogue` wrote (GADGET-4's layout, which yt's
  GADGET FOF reader, written for GADGET-3's, does not recognise): its ``Group`` fields
  (``("Group", "particle_mass")``, positions, velocities, ``GroupLen``) in the file's units;
  ``GroupVel`` is GADGET-4's a · v_pec.

Each class is the most specialised candidate for its files, so ``yt.load`` picks it over
yt's own AREPO and GADGET classes (which also accept a snapshot).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from yt.frontends.arepo.api import ArepoHDF5Dataset
from yt.frontends.arepo.fields import ArepoFieldInfo
from yt.frontends.gadget_fof.api import GadgetFOFDataset
from yt.frontends.gadget_fof.data_structures import GadgetFOFHDF5File
from yt.utilities.cosmology import Cosmology

from .snapshot import snapshot_files
from .yt_files import (bounding_box, group_box, is_hybridtree_file, physical_field_units,
                       quiet_about_periodicity, unit_base_and_box)

__all__ = ["HybridtreeFOFDataset", "HybridtreeFieldInfo", "HybridtreeHDF5Dataset"]


class HybridtreeFieldInfo(ArepoFieldInfo):
    """AREPO's fields, the file's own (``("PartType1", "Masses")`` ...) given in physical
    units, as their aliases (``particle_mass``) are: yt would show them in ``code_mass``."""

    known_particle_fields = (*ArepoFieldInfo.known_particle_fields,
                             ("Acceleration", ("", [], None)))   # units: the file's

    def setup_particle_fields(self, ptype: str, *args: Any, **kwargs: Any) -> None:
        super().setup_particle_fields(ptype, *args, **kwargs)
        for name, _ in self.known_particle_fields:
            field = self.get((ptype, name))
            # positions stay in code_length: yt selects particles by them
            if (field is None or (ptype, name) not in self.ds.field_list
                    or field.units in ("", "code_length")):
                continue
            unit = self.ds.quan(1.0, field.units).units
            if not unit.is_dimensionless:
                field.output_units = str(self.ds.unit_system[unit.dimensions])


class HybridtreeHDF5Dataset(ArepoHDF5Dataset):
    """A hybridtree snapshot in yt (module docstring); ``kwargs`` as yt's
    ``GadgetHDF5Dataset``'s, a given ``unit_base`` or ``bounding_box`` replacing the file's."""

    _field_info_class = HybridtreeFieldInfo

    def __init__(self, filename: str, **kwargs: Any):
        units, box = unit_base_and_box(Path(filename))
        if units is not None:
            kwargs.setdefault("unit_base", units)
        if box == 0 and kwargs.get("bounding_box") is None:
            kwargs["bounding_box"] = bounding_box(snapshot_files(filename))
        with quiet_about_periodicity():
            super().__init__(filename, **kwargs)

    @classmethod
    def _is_valid(cls, filename: str, *args: Any, **kwargs: Any) -> bool:
        return is_hybridtree_file(filename, "snapshot")

    def _set_code_unit_attributes(self) -> None:
        # AREPO's reader would put the file's units over the ones given (with a warning)
        if self._unit_base is not None:
            return super(ArepoHDF5Dataset, self)._set_code_unit_attributes()
        return super()._set_code_unit_attributes()

    def _parse_parameter_file(self) -> None:
        super()._parse_parameter_file()
        self.field_units = {**(self.field_units or {}), **physical_field_units(
            self.parameter_filename)}
        h = self.parameters
        # hybridtree's cosmological snapshots: Omega0 > 0 (yt asks for OmegaLambda != 0)
        if not self.cosmological_simulation and float(h.get("Omega0", 0.0)) > 0:
            self.cosmological_simulation = 1
            self.omega_matter, self.omega_lambda = float(h["Omega0"]), float(h["OmegaLambda"])
            self.hubble_constant = float(h["HubbleParam"])
            self.current_redshift = float(h["Redshift"])
            self.current_time = Cosmology(
                hubble_constant=self.hubble_constant, omega_matter=self.omega_matter,
                omega_lambda=self.omega_lambda).t_from_z(self.current_redshift)


class _CatalogueFile(GadgetFOFHDF5File):
    """One catalogue file: GADGET-4's header names where yt's reader asks for GADGET-3's."""

    @property
    def header(self) -> dict:
        return self._header

    @header.setter
    def header(self, value: dict) -> None:
        value.setdefault("Nsubgroups_ThisFile", value.get("Nsubhalos_ThisFile", 0))
        self._header = value


class HybridtreeFOFDataset(GadgetFOFDataset):
    """A hybridtree FOF catalogue in yt (module docstring): the ``Group`` particle type,
    in the units of the snapshot it was found in; open boundaries (``BoxSize`` 0): a
    non-periodic cube around the groups."""

    _file_class = _CatalogueFile

    def __init__(self, filename: str, **kwargs: Any):
        units, _ = unit_base_and_box(Path(filename), particles=False)
        if units is not None and kwargs.get("unit_base") is None:
            kwargs["unit_base"] = dict(units)
        super().__init__(filename, **kwargs)

    @classmethod
    def _is_valid(cls, filename: str, *args: Any, **kwargs: Any) -> bool:
        return is_hybridtree_file(filename, "catalogue")

    def _parse_parameter_file(self) -> None:
        super()._parse_parameter_file()
        p = self.parameters
        self.particle_types = self.particle_types_raw = ("Group",)
        if int(p.get("NumFiles", 1)) == 1:
            self.filename_template = self.parameter_filename
        self.cosmological_simulation = int(float(p.get("Omega0", 0.0)) > 0)
        if not self.cosmological_simulation:
            self.hubble_constant, self.current_redshift = 1.0, 0.0
            self.current_time = float(p.get("Time", 0.0))
        if not float(p.get("BoxSize", 0.0)) > 0:
            edges = group_box(self.parameter_filename)
            self.domain_left_edge, self.domain_right_edge = edges[:, 0], edges[:, 1]
            self._periodicity = (False, False, False)

    def _set_code_unit_attributes(self) -> None:
        super()._set_code_unit_attributes()
        if self.cosmological_simulation:
            # GroupVel is GADGET-4's a v_pec (yt's reader assumes GADGET-3's)
            self.velocity_unit = self.quan(float(self.velocity_unit.d), "cm/s/a")
        else:
            self.time_unit = self.length_unit / self.velocity_unit
