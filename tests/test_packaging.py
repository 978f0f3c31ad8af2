"""The plug-in layout works both installed and straight from a checkout."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO


@pytest.mark.live
def test_checkout_imports_top_level_plugins_as_pilot_sys_plugins() -> None:
    # -S: no site-packages, so neither an installed copy nor an editable finder can help.
    code = (
        "import importlib.util, pilot_sys, pilot_sys.plugins as p;"
        "print(p.__file__);"
        "print(importlib.util.find_spec('pilot_sys.plugins.dynamic').origin)"
    )
    out = subprocess.run([sys.executable, "-S", "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    plugins_init, dynamic_init = out.stdout.split()
    assert plugins_init == str(REPO / "plugins" / "__init__.py")
    assert dynamic_init == str(REPO / "plugins" / "dynamic" / "__init__.py")


def test_no_generic_top_level_plugins_module_is_declared() -> None:
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "plugins" not in config["packages"]
    assert config["package-dir"]["pilot_sys.plugins"] == "plugins"
