"""The peak resident memory a forward and backward pass adds, measured, against beirx's estimate of it.

This is where the coefficients of :mod:`beirx.train.memory` come from. For each length, a fresh process loads
the model, allocates AdamW's two moments, and runs forward and backward passes of 1, 2, ... sequences of that many
tokens (random token ids, training mode, so dropout is on), each size twice; the second pass's peak (``VmHWM``,
reset before each pass through ``/proc/self/clear_refs``) is the measurement, because the allocator keeps memory
the first one freed, as it does from one training step to the next. The fit (least squares over all passes):
peak - (resident before the passes + moments + gradients) = a * (the per-token terms of the live activations)
+ b * (attention scores) + c, for TOKEN_OVERHEAD, SCORE_BYTES and RETAINED.

Run:  BEIRX_TEST_E5=DIR python benchmarks/train_pass_memory.py [--passes 512:1,2,4,8/256:2,8/128:8,32]
      (Linux; minutes of CPU)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import numpy as np

from _shared import REPO, e5_default

_GB = 1 << 30

CHILD = """
import json, sys, torch
from sentence_transformers import SentenceTransformer
from beirx.train.memory import peak_resident_bytes, resident_bytes
model = SentenceTransformer(sys.argv[1], device="cpu")
model.train()
encoder = model[0].auto_model
params = [p for p in encoder.parameters() if p.requires_grad]
print(json.dumps({"params": sum(p.numel() for p in params), "resident": resident_bytes()}), flush=True)
moments = [torch.zeros_like(p) for p in params for _ in range(2)]
ids = torch.Generator().manual_seed(0)
tokens = int(sys.argv[2])
for n in map(int, sys.argv[3].split(",")):
    for again in (False, True):
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # the peak starts again from what is resident now
        batch = torch.randint(5, encoder.config.vocab_size, (n, tokens), generator=ids)
        encoder(input_ids=batch, attention_mask=torch.ones_like(batch)).last_hidden_state.sum().backward()
        if again:
            print(json.dumps({"n": n, "peak": peak_resident_bytes()}), flush=True)
    for p in params:
        p.grad = None
"""


def measure(model: str, tokens: int, sequences: str) -> tuple[list[dict], dict]:
    out = subprocess.run([sys.executable, "-c", CHILD, model, str(tokens), sequences], cwd=REPO, check=True,
                         capture_output=True, text=True, env={"PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1",
                                                              "PATH": "/usr/bin:/bin"}).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return rows[1:], rows[0]


def main() -> None:
    from beirx.train import memory

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", **e5_default(), help="multilingual-e5-small folder (default $BEIRX_TEST_E5)")
    parser.add_argument("--passes", default="512:1,2,4,8/256:2,8/128:8,32",
                        help="TOKENS:SEQUENCES groups separated by / (default 512:1,2,4,8/256:2,8/128:8,32)")
    args = parser.parse_args()
    from transformers import AutoConfig

    shape = memory.Shape.of(AutoConfig.from_pretrained(str(args.model)))
    found = []
    for group in args.passes.split("/"):
        tokens, sequences = group.split(":")
        rows, before = measure(str(args.model), int(tokens), sequences)
        found += [(r["n"], int(tokens), r["peak"], before) for r in rows]
    print(f"{'seqs':>4} {'tokens':>6} {'measured GB':>11} {'live (Korthikanti) GB':>21} {'estimate GB':>11}")
    design, added = [], []
    for n, s, peak, before in found:
        fixed = before["resident"] + 12 * before["params"]  # + gradients and the two moments
        live = fixed + n * shape.sequence_bytes(s)
        print(f"{n:>4} {s:>6} {peak / _GB:>11.2f} {live / _GB:>21.2f} {(fixed + shape.pass_bytes(n, s)) / _GB:>11.2f}")
        design.append([n * s * shape.hidden * shape.layers * (34 + 8 * shape.intermediate / shape.hidden),
                       n * shape.heads * s * s * shape.layers, 1.0])
        added.append(peak - fixed - n * 4 * s * shape.hidden * 2)
    token_factor, score_bytes, retained = np.linalg.lstsq(np.array(design), np.array(added, float), rcond=None)[0]
    print(f"fit: the per-token terms x {token_factor:.2f}, {score_bytes:.1f} bytes per attention score, "
          f"{retained / _GB:.2f} GB kept (beirx: x {memory.TOKEN_OVERHEAD}, {memory.SCORE_BYTES}, "
          f"{memory.RETAINED / _GB:.2f}, then +{memory.MARGIN - 1:.0%})")

if __name__ == "__main__":
    main()
