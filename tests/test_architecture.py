"""Layer boundaries (DESIGN.md, STYLE.md 1): checked by import-linter's contracts, and the README's map of
the modules kept true."""

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_import_contracts_hold():
    lint = os.path.join(os.path.dirname(sys.executable), "lint-imports")
    r = subprocess.run([lint, "--no-cache"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Contracts: 7 kept, 0 broken." in r.stdout


def _engine_layers() -> list[str]:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (layers,) = [c for c in contracts if c.get("containers") == ["engine"]]
    return [name.strip() for layer in layers["layers"] for name in layer.split("|")]


def test_every_engine_module_sits_in_a_layer():
    """The engine's layer contract names every sub-package and top module of engine/, so nothing new can sit
    outside it (import-linter ignores a module no layer names)."""
    names = {p.stem if p.is_file() else p.name for p in (ROOT / "engine").iterdir()
             if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())}
    assert names == set(_engine_layers())


def _modules(package: str) -> set[str]:
    out = set()
    for path in (ROOT / package).rglob("*.py"):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        out.add(".".join(parts))
    return out


def test_readme_lists_every_module_once():
    """README "Architecture": one line per module of engine, kernels and gui, each naming a module that
    exists."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Architecture", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^- `([a-z_.]+)`", section, re.M)
    assert len(listed) == len(set(listed)), "a module listed twice"
    want = _modules("engine") | _modules("kernels") | _modules("gui")
    assert set(listed) == want, (sorted(want - set(listed)), sorted(set(listed) - want))
