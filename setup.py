"""Build shim: pyproject.toml holds the metadata and the package-data globs; this file only names the packages.

The project's folders are conformance/ (the code), generators/ (probe generators) and specs/ (the YAML tables).
Installed, they are one import namespace, ``ptxconf``, so nothing collides with the unrelated distributions that
own the top-level names ``conformance`` and ``generators`` on the package index:

    conformance/  -> ptxconf
    generators/   -> ptxconf.generators
    specs/        -> ptxconf.specdata   (data only, read through importlib.resources)

pyproject.toml alone cannot map folders to other package names while discovering subpackages, so discovery runs
here: a new family under conformance/families/ is found with no change to any packaging file.
"""

from setuptools import find_packages, setup


def _mapped(folder: str, package: str) -> list[str]:
    return [package] + [f"{package}.{sub}" for sub in find_packages(where=folder)]


setup(
    packages=[*_mapped("conformance", "ptxconf"), *_mapped("generators", "ptxconf.generators"), "ptxconf.specdata"],
    package_dir={"ptxconf": "conformance", "ptxconf.generators": "generators", "ptxconf.specdata": "specs"},
)
