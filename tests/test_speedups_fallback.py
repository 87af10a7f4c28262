"""Without the compiled extension (no C compiler at install time) beirx picks the pure-Python code by itself.

Checked in a fresh interpreter where ``beirx._speedups`` cannot be imported: ``beirx.speedups.native`` is
None, the choice is logged at debug level naming the reason, and analysis, BM25 and run files still work.
"""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO

_CODE = """
import json, logging, sys
records = []
logging.basicConfig(level=logging.DEBUG, handlers=[type("H", (logging.Handler,), {"emit": lambda s, r: records.append((r.levelname, r.getMessage()))})()])
sys.modules["beirx._speedups"] = None  # as if the optional extension had not been built
import beirx.speedups
from beirx.language_packs import get_pack
from beirx.evaluate.runs import _trec_lines
import beirx.evaluate.runs as runs
print(json.dumps({"native": beirx.speedups.native is None,
                  "log": [r for r in records if r[1].startswith("compiled speed-ups not available")],
                  "pl": get_pack("pl").analyze("Szczepionki zmniejszają ryzyko"),
                  "en": get_pack("en").analyze("Running studies of the incredibly happy biotechnology"),
                  "run_native": runs.native is None}))
"""


def test_pure_python_fallback_is_automatic_and_logged_at_debug():
    out = subprocess.run([sys.executable, "-c", _CODE], capture_output=True, text=True, cwd=REPO, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["native"] and result["run_native"]
    assert [level for level, _ in result["log"]] == ["DEBUG"]
    assert result["pl"] == ["szczepionka", "zmniejszać", "ryzyko"]
    assert result["en"] == ["run", "studi", "incred", "happi", "biotechnolog"]


def test_beirx_pure_python_env_forces_the_python_path():
    code = "import beirx.speedups as s; print(s.native is None)"
    env = {"BEIRX_PURE_PYTHON": "1", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env, check=True)
    assert out.stdout.strip() == "True"
