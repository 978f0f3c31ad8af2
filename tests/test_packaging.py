"""The plug-in layout works both installed and straight from a checkout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = pytest.mark.live  # every test here starts Python or pip

# What a build reads from the checkout (pyproject's package-dir, readme).
BUILD_INPUTS = ("pyproject.toml", "README.md", "pilot_sys", "plugins")


def test_checkout_imports_top_level_plugins_as_pilot_sys_plugins() -> None:
    # -S: no site-packages, so neither an installed copy nor an editable finder can help.
    code = (
        "import importlib.util, pilot_sys, pilot_sys.plugins as p;"
        "print(p.__file__);"
        "print(importlib.util.find_spec('pilot_sys.plugins.dynamic').origin)"
    )
    out = subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    plugins_init, dynamic_init = out.stdout.split()
    assert plugins_init == str(REPO / "plugins" / "__init__.py")
    assert dynamic_init == str(REPO / "plugins" / "dynamic" / "__init__.py")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from a copy of the checkout, as ``pip install .`` builds it.

    The build runs in pip's isolated environment (pyproject's build requirements), because the
    test environment's own setuptools need not be one that can build this project; the copy
    keeps the build's ``build/`` and ``*.egg-info`` folders out of the checkout."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    for name in BUILD_INPUTS:
        origin = REPO / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            source.mkdir(exist_ok=True)
            shutil.copy2(origin, source / name)
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "-w",
            str(work / "dist"),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (found,) = (work / "dist").glob("pilot_sys-*.whl")
    return found


def _checkout_modules() -> set[str]:
    """Every module file of the checkout, named as it is installed."""
    files: set[str] = set()
    for folder, installed in (("pilot_sys", "pilot_sys"), ("plugins", "pilot_sys/plugins")):
        files |= {
            f"{installed}/{p.relative_to(REPO / folder)}" for p in (REPO / folder).rglob("*.py")
        }
    return files


@pytest.mark.slow
def test_the_wheel_holds_every_module_under_pilot_sys_and_nothing_else(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    dist_info = [t for t in tops if t.endswith(".dist-info")]
    assert tops - set(dist_info) == {"pilot_sys"}  # no generic top-level `plugins` package
    assert {n for n in names if n.endswith(".py")} == _checkout_modules()  # none left behind


@pytest.mark.slow
def test_the_installed_layout_imports_its_own_plugins_and_console_script(
    wheel: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)  # a wheel is installed by unpacking it
    expected = {
        kind: sorted(p.stem for p in (REPO / "plugins" / kind).glob("*.py") if p.stem != "__init__")
        for kind in ("static", "dynamic")
    }
    code = f"""
import importlib, importlib.metadata, json, pkgutil
import pilot_sys, pilot_sys.plugins
(dist,) = importlib.metadata.distributions(path=[{str(site)!r}])
(script,) = [e for e in dist.entry_points if e.group == "console_scripts"]
kinds = {{k: sorted(m.name for m in pkgutil.iter_modules(
    importlib.import_module("pilot_sys.plugins." + k).__path__)) for k in ("static", "dynamic")}}
try:
    import plugins
    top = plugins.__file__
except ModuleNotFoundError:
    top = None
print(json.dumps({{"package": pilot_sys.__file__, "plugins": pilot_sys.plugins.__file__,
                   "script": [script.name, script.value, callable(script.load())],
                   "kinds": kinds, "top_level_plugins": top}}))
"""
    # The unpacked wheel first on the path and the checkout off it (no PYTHONPATH to it, and a
    # working directory outside it), so that only the installed layout can answer.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(site)}
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["package"] == str(site / "pilot_sys" / "__init__.py")
    assert seen["plugins"] == str(site / "pilot_sys" / "plugins" / "__init__.py")
    assert seen["script"] == ["pilot-sys", "pilot_sys.cli:main", True]
    assert seen["kinds"] == expected
    assert seen["top_level_plugins"] is None
