"""Files: netCDF posteriors with checksums, atomic writes, data hashes, code imported by location.

- :mod:`~pragmodels.io.netcdf`: :func:`~pragmodels.save_netcdf`, :func:`~pragmodels.load_netcdf`;
- :mod:`~pragmodels.io.checksums`: sha256 of model data and of every variable of a result;
- :mod:`~pragmodels.io.atomic`: write to a temporary sibling, flush, rename; remove what killed
  writers left;
- :mod:`~pragmodels.io.errors`: the exceptions of result files;
- :mod:`~pragmodels.io.imports`: Python code imported from where its files are (a study's
  package, ``"path/to/file.py:attr"``), without ``sys.path`` edits.

No pickle anywhere.
"""
