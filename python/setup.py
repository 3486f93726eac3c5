"""Packages the objectcache module CMake built beside this file (build/release/python), so that
`pip install ./python` from the build directory installs it with no network and no compiler
(the README's "Python package"). Run from the build tree, not the source tree."""
import glob
import os

from setuptools import setup
from setuptools.dist import Distribution

here = os.path.dirname(os.path.abspath(__file__))
if not glob.glob(os.path.join(here, "objectcache", "_native*.so")):
    raise SystemExit("objectcache/_native*.so is missing: build the project first "
                     "(cmake --build --preset release) and install from build/release/python")


class BinaryDistribution(Distribution):
    """The wheel holds a compiled module: tag it for this platform and Python."""

    def has_ext_modules(self):
        return True


setup(
    name="objectcache",
    version="0.1.0",
    description="ObjectCache KV-cache client (pybind11 over liboc_client)",
    packages=["objectcache"],
    package_data={"objectcache": ["_native*.so", "*.pyi", "py.typed"]},
    include_package_data=True,
    distclass=BinaryDistribution,
    python_requires=">=3.9",
    zip_safe=False,
)
