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

import importlib.util
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py


class _BuildWithStamp(build_py):
    """Stamp the built package with the checkout's revision, so an installed wheel records what it was built from."""

    def run(self) -> None:
        super().run()
        here = Path(__file__).resolve().parent
        spec = importlib.util.spec_from_file_location("_ptxconf_revision", here / "conformance" / "revision.py")
        revision = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(revision)
        built = Path(self.build_lib) / "ptxconf"
        try:
            revision.write_stamp(built, source_root=here, code=[built])
        except (ValueError, OSError):
            pass  # built outside a checkout (an sdist): the wheel records no revision rather than a guessed one


def _mapped(folder: str, package: str) -> list[str]:
    return [package] + [f"{package}.{sub}" for sub in find_packages(where=folder)]


setup(
    packages=[*_mapped("conformance", "ptxconf"), *_mapped("generators", "ptxconf.generators"), "ptxconf.specdata"],
    package_dir={"ptxconf": "conformance", "ptxconf.generators": "generators", "ptxconf.specdata": "specs"},
    cmdclass={"build_py": _BuildWithStamp},
)
