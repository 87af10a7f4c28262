"""Peak memory of a bi-encoder training step: beirx's estimate (beirx.train.memory) against the measured peak.

Each setting runs ``beirx train bi-encoder --max-steps 2`` on SciFact's train split in a process of its own and
reports the estimate the run logged before its first step, the peak it logged after two steps (``VmHWM``), the
whole process's peak (``ru_maxrss``, saving the model included) and its CPU seconds. ``--plain`` settings run the loss without GradCache (sentence-transformers'
``MultipleNegativesRankingLoss``, what beirx did before ``--mini-batch-size``): their peak grows with the batch,
which is what killed the README example (batch 32, 512 tokens) on a 24 GB machine; fit a line through small
batches and read it at 32 instead of running it.

Run:  BEIRX_TEST_E5=DIR python benchmarks/train_memory.py [--settings 8/4,32/8] [--plain 2,4,8]
      (SciFact from ../shared, as the other benchmarks; each setting takes minutes of CPU)
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from _shared import SCIFACT, e5_default

REPO = Path(__file__).resolve().parents[1]

PLAIN = """
import sys
import sentence_transformers.sentence_transformer.losses as losses
from beirx.cli import main
# the loss as it was before GradCache: every text of the batch in one forward/backward pass
losses.CachedMultipleNegativesRankingLoss = lambda model, mini_batch_size: losses.MultipleNegativesRankingLoss(model)
sys.exit(main(sys.argv[1:]))
"""


def run(model: str, batch: int, mini: int | None, out: Path) -> dict:
    argv = ["train", "bi-encoder", "--dataset", str(SCIFACT), "--lang", "en", "--model", model, "--max-steps", "2",
            "--batch-size", str(batch), "--output", str(out), "--no-progress", "--max-memory", "1000"]
    argv += ["--mini-batch-size", str(mini)] if mini else ["--mini-batch-size", str(batch)]
    code = ["-c", PLAIN] if mini is None else ["-m", "beirx"]
    with open(out.with_suffix(".log"), "w+") as log:
        child = subprocess.Popen([sys.executable, *code, *argv], stdout=log, stderr=subprocess.STDOUT, cwd=REPO,
                                 env={"PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin",
                                      "BEIRX_HOME": str(out.parent / "home")})
        _, status, usage = os.wait4(child.pid, 0)  # this child's own peak, not the maximum over all children
        child.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        text = log.read()
    if child.returncode:
        raise SystemExit(text[-3000:])
    found = re.search(r"training memory: about ([\d.]+) GB at the peak", text)
    step = re.findall(r"step \d+ of this session peaked at ([\d.]+) GB", text)
    return {"estimate_gb": float(found.group(1)) if found else None, "step_gb": float(step[-1]) if step else None,
            "peak_gb": usage.ru_maxrss / 2 ** 20, "cpu_s": usage.ru_utime + usage.ru_stime}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", **e5_default(), help="multilingual-e5-small folder (default $BEIRX_TEST_E5)")
    parser.add_argument("--settings", default="8/4,32/8", help="BATCH/MINI pairs with GradCache (default 8/4,32/8)")
    parser.add_argument("--plain", default="", help="batch sizes without GradCache, e.g. 2,4,8")
    args = parser.parse_args()
    rows = [(int(b), int(m)) for b, m in (s.split("/") for s in args.settings.split(",") if s)]
    rows += [(int(b), None) for b in args.plain.split(",") if b]
    print(f"{'loss':<10} {'batch':>5} {'mini':>5} {'estimate GB':>12} {'step 1 GB':>10} {'run GB':>7} {'CPU s':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for i, (batch, mini) in enumerate(rows):
            got = run(args.model, batch, mini, Path(tmp) / f"out{i}")
            print(f"{'gradcache' if mini else 'plain':<10} {batch:>5} {mini or batch:>5} "
                  f"{got['estimate_gb'] or float('nan'):>12.1f} {got['step_gb'] or float('nan'):>10.1f} "
                  f"{got['peak_gb']:>7.2f} {got['cpu_s']:>7.0f}",
                  flush=True)


if __name__ == "__main__":
    main()
