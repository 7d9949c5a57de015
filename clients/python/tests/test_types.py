"""The package says it is typed (py.typed): mypy --strict finds nothing in it."""

from __future__ import annotations

import os
import sys

from conftest import HERE, run_to_end


def test_mypy_strict_is_clean(tmp_path):
    source = os.path.join(os.path.dirname(HERE), "src", "sessionkeeper")
    result = run_to_end([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path), source], 600)
    assert result.returncode == 0, result.stdout[-4000:]
