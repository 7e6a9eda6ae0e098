"""Results on disk: netCDF posteriors with checksums, atomic writes, data hashes.

- :mod:`~pragmodels.io.netcdf`: :func:`~pragmodels.save_netcdf`, :func:`~pragmodels.load_netcdf`;
- :mod:`~pragmodels.io.checksums`: sha256 of model data and of every variable of a result;
- :mod:`~pragmodels.io.atomic`: write to a temporary sibling, flush, rename; remove what killed
  writers left;
- :mod:`~pragmodels.io.errors`: the exceptions of result files.

No pickle anywhere.
"""
