"""Build shim: pyproject.toml holds the metadata and the package-data globs; this file only names the packages.

The top-level specs/ folder is part of the project's layout, and the installed package must carry it.  It is
mapped into the package as ``conformance.specdata`` (a data-only package, read through importlib.resources by
``conformance.spec.loader.default_specs_dir``).  pyproject.toml alone cannot add a mapped package to the ones
``packages.find`` discovers, so discovery runs here: new families under conformance/families/ are found with no
change to any packaging file.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["conformance", "conformance.*", "generators", "generators.*"]), "conformance.specdata"],
    package_dir={"conformance.specdata": "specs"},
)
