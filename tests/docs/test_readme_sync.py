"""While README.md still holds the manual, each documentation page holds its sections verbatim.

The pages mark their copies (``<!-- README: ## Section -->`` ... ``<!-- /README -->``);
``python docs/sync_readme.py`` refreshes them after README changes, and this test fails until it
has been run. ``python docs/sync_readme.py --finalize`` makes README the front page and deletes
the script and this test: from then on the pages are the manual.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_pages_hold_the_readme_sections():
    out = subprocess.run([sys.executable, str(ROOT / "docs" / "sync_readme.py"), "--check"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, (out.stdout + out.stderr
                                 + "\nrun `python docs/sync_readme.py` to copy README's sections")
