"""The package's build backend: setuptools' own, run on a copy of this folder in a temporary one.

setuptools builds in the folder it is given, leaving `build/` and `src/*.egg-info` there; a user who runs
`pip install ./clients/python` in a checkout expects the checkout as it was (as `git status` shows it). Every hook
that writes (metadata, wheel, sdist) runs on a private copy instead; pip hands the hooks absolute output folders, so
what they make lands where pip asked. Editable installs point at the folder itself and run in place.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile

from setuptools import build_meta as _setuptools

#: What is never copied: what earlier builds and test runs left, and virtualenvs.
_LEFT_OUT = shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__", ".venv", ".pytest_cache", ".mypy_cache")


def _on_a_copy(hook):
    @functools.wraps(hook)
    def run(*args, **kwargs):
        source = os.getcwd()
        with tempfile.TemporaryDirectory(prefix="sessionkeeper-build-") as folder:
            copy = os.path.join(folder, "package")
            shutil.copytree(source, copy, ignore=_LEFT_OUT, symlinks=True)
            os.chdir(copy)
            try:
                return hook(*args, **kwargs)
            finally:
                os.chdir(source)
    return run


get_requires_for_build_wheel = _on_a_copy(_setuptools.get_requires_for_build_wheel)
get_requires_for_build_sdist = _on_a_copy(_setuptools.get_requires_for_build_sdist)
prepare_metadata_for_build_wheel = _on_a_copy(_setuptools.prepare_metadata_for_build_wheel)
build_wheel = _on_a_copy(_setuptools.build_wheel)
build_sdist = _on_a_copy(_setuptools.build_sdist)

get_requires_for_build_editable = _setuptools.get_requires_for_build_editable
prepare_metadata_for_build_editable = _setuptools.prepare_metadata_for_build_editable
build_editable = _setuptools.build_editable
