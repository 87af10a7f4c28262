"""Dense encoding on CPU: ONNX Runtime int8 (``--dense-backend onnx --quantize int8``) vs torch fp32.

Encodes the same ``--passages`` real SciFact passages (the first N of the corpus, ``"passage: "``
prompt, the model's max length, batches of 32, longest first as beirx encodes) with both backends in
one process, alternating, ``--repeats`` times; prints passages per CPU second and per wall second
(medians), their ratio, and the agreement of the embeddings (cosine per passage). The ONNX export is
made (or loaded from ``$BEIRX_HOME/onnx``) before the timings. Target: int8 >= 2x torch fp32
passages/CPU-s. The full-SciFact nDCG@10 of both is a separate ``beirx eval`` run each (see the report).

Run:  python benchmarks/dense_onnx.py [--model E5_FOLDER] [--passages 500] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import REPO, SCIFACT, e5_default  # noqa: E402

sys.path.insert(0, str(REPO))


class _Pack:
    code = "en"
    models: dict = {}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, **e5_default())
    parser.add_argument("--scifact", type=Path, default=SCIFACT)
    parser.add_argument("--passages", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from beirx.evaluate.retrievers.dense import DenseRetriever

    with open(args.scifact / "corpus.jsonl", encoding="utf-8") as fh:
        docs = [json.loads(line) for line, _ in zip(fh, range(args.passages))]
    texts = [f"{d['title']} {d['text']}".strip() for d in docs]
    common = dict(model=str(args.model), device="cpu", use_cache=False, show_progress=False)
    systems = {"torch fp32": DenseRetriever(_Pack(), **common),
               "onnx int8": DenseRetriever(_Pack(), backend="onnx", quantize="int8", **common)}
    order = systems["torch fp32"].encoding_order(texts)
    ordered = [texts[i] for i in order]
    for retriever in systems.values():
        retriever.encode(ordered[:4], "passage: ")  # load / export outside the timings
    cpu: dict[str, list[float]] = {name: [] for name in systems}
    wall: dict[str, list[float]] = {name: [] for name in systems}
    vectors = {}
    for _ in range(args.repeats):
        for name, retriever in systems.items():
            c, w = time.process_time(), time.perf_counter()
            vectors[name] = retriever.encode(ordered, "passage: ")
            cpu[name].append(len(texts) / (time.process_time() - c))
            wall[name].append(len(texts) / (time.perf_counter() - w))
    cosine = (vectors["torch fp32"] * vectors["onnx int8"]).sum(axis=1)
    print(f"{len(texts)} SciFact passages, e5 {args.model.name}, max_length {systems['torch fp32'].max_length}, "
          f"batch 32, median of {args.repeats}")
    for name in systems:
        print(f"  {name:<11}{statistics.median(cpu[name]):8.2f} passages/CPU-s {statistics.median(wall[name]):8.2f}"
              f" passages/wall-s   runs (CPU): {', '.join(f'{x:.2f}' for x in cpu[name])}")
    ratio = statistics.median(cpu["onnx int8"]) / statistics.median(cpu["torch fp32"])
    wall_ratio = statistics.median(wall["onnx int8"]) / statistics.median(wall["torch fp32"])
    print(f"  onnx int8 / torch fp32: x{ratio:.2f} per CPU-s, x{wall_ratio:.2f} per wall-s; "
          f"cosine(int8, fp32) per passage: min {cosine.min():.4f}, mean {cosine.mean():.4f}")
    print(f"target >= 2x passages/CPU-s: {'met' if ratio >= 2 else 'NOT met'}")
    return 0 if ratio >= 2 else 1


if __name__ == "__main__":
    raise SystemExit(main())
