"""Packages the objectcache module (one pybind11 extension over liboc_client) for pip.

Two ways to run it, both offline (`--no-index --no-build-isolation`: Debian's setuptools):
- from the source tree, given a configured CMake build of liboc_client (the README's
  `python3 -m pip install --no-index --no-build-isolation ./python`, or `cd python && python3
  setup.py build`): it builds the module with that build's own compiler flags (`cmake --build
  <dir> --target oc_python`; <dir> is $OC_BUILD_DIR, default ../build/release) and packages it;
- from the copy CMake puts in <dir>/python beside the built module: it packages that module.
The version has one source, the CMake project's VERSION (CMakeLists.txt), which the configure
writes into <dir>/python/objectcache/_version.py.
"""
import glob
import os
import re
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))


def built_tree():
    """The directory holding objectcache/_native*.so (HERE in the build tree), and the CMake
    build directory to refresh it from (None in the build tree)."""
    if glob.glob(os.path.join(HERE, "objectcache", "_native*.so")):
        return HERE, None
    build = os.path.abspath(os.environ.get("OC_BUILD_DIR") or
                            os.path.join(HERE, "..", "build", "release"))
    if not os.path.isfile(os.path.join(build, "CMakeCache.txt")):
        raise SystemExit(f"no CMake build of liboc_client at {build}: configure and build it "
                         "first (cmake --preset release && cmake --build --preset release), or "
                         "set OC_BUILD_DIR to the build directory")
    return os.path.join(build, "python"), build


def version():
    tree, _ = built_tree()
    path = os.path.join(tree, "objectcache", "_version.py")
    try:
        text = open(path, encoding="utf-8").read()
    except OSError:
        raise SystemExit(f"{path} is missing: configure the CMake build (it writes the version)")
    m = re.search(r'^__version__ = "([^"]+)"$', text, re.M)
    if not m:
        raise SystemExit(f"{path} holds no __version__")
    return m.group(1)


class BuildPy(build_py):
    """The pure-Python files as usual, then the module and _version.py from the CMake build."""

    def run(self):
        super().run()
        tree, build = built_tree()
        if build is not None:
            subprocess.run(["cmake", "--build", build, "--target", "oc_python"], check=True)
        dst = os.path.join(self.build_lib, "objectcache")
        os.makedirs(dst, exist_ok=True)
        for f in glob.glob(os.path.join(tree, "objectcache", "_native*.so")) + \
                [os.path.join(tree, "objectcache", "_version.py")]:
            shutil.copyfile(f, os.path.join(dst, os.path.basename(f)))


class BinaryDistribution(Distribution):
    """The wheel holds a compiled module: tag it for this platform and Python."""

    def has_ext_modules(self):
        return True


setup(
    name="objectcache",
    version=version(),
    description="ObjectCache KV-cache client (pybind11 over liboc_client)",
    packages=["objectcache", "objectcache.integrations"],
    package_data={"objectcache": ["_native*.so", "*.pyi", "py.typed"]},
    include_package_data=True,
    distclass=BinaryDistribution,
    cmdclass={"build_py": BuildPy},
    python_requires=">=3.9",
    zip_safe=False,
)
