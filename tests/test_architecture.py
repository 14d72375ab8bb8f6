"""Layer boundaries (DESIGN.md, STYLE.md 1): checked by import-linter's contracts."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_import_contracts_hold():
    lint = os.path.join(os.path.dirname(sys.executable), "lint-imports")
    r = subprocess.run([lint, "--no-cache"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Contracts: 6 kept, 0 broken." in r.stdout
