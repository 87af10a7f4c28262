#!/usr/bin/env bash
# The quickstart: BM25 and a dense model on a BEIR dataset, a subset cut by the default recipe,
# translated into Spanish by Apertium and checked, BM25 in both languages, and a report comparing
# the two.
#
#   DATA=scifact bash quickstart.sh    # a catalogue name (downloaded once into ~/.cache/beirx)
#   DATA=path/to/a/beir/folder bash quickstart.sh
#
# Everything is written under OUT (default: quickstart/). Set-up: README.md, "Set-up".
set -euo pipefail
DATA="${DATA:-scifact}"
OUT="${OUT:-quickstart}"

# What it needs, checked before any work: one sentence naming the install line.
command -v beirx >/dev/null \
    || { echo "beirx is not installed: pip install -e '.[quickstart]'" >&2; exit 2; }
python -c "import all_minilm_l6_v2, matplotlib, py3langid, sacrebleu, sentence_transformers" \
    2>/dev/null \
    || { echo "the quickstart's extras are missing: pip install -e '.[quickstart]'" >&2; exit 2; }
apertium -l 2>/dev/null | grep -E "^\s*eng-spa\s*$" >/dev/null \
    || { echo "Apertium's English-Spanish pair is missing:" \
              "sudo apt-get install apertium apertium-eng-spa" >&2; exit 2; }

# a folder: its absolute path, as the steps run in OUT
if [ -e "$DATA" ]; then DATA="$(cd "$DATA" && pwd)"; fi
mkdir -p "$OUT" && cd "$OUT"
MODEL=models/all-MiniLM-L6-v2
[ -d "$MODEL" ] || python -c "from all_minilm_l6_v2 import extract_model; extract_model('models')"

# 1. BM25 (Lucene's English analyzer) and all-MiniLM-L6-v2 on the full test set
beirx eval --dataset "$DATA" --lang en --retriever bm25 --retriever dense --model "$MODEL" \
    --output results/full

# 2. a subset by the default recipe (every judged query; the judged documents and a uniform random
#    sample, no pool, so it flatters no model run on it later), translated into Spanish by Apertium
beirx subset --dataset "$DATA" --output subset
beirx translate --dataset subset --lang es --translator apertium --no-quality --output subset-es

# 3. its quality report: rule checks on every row,
#    a round trip es -> en (Apertium) on 100 rows per field
beirx quality subset-es --no-similarity --encoder "$MODEL" \
    --roundtrip-translator apertium --roundtrip-sample 100

# 4. BM25 in both languages, and a report comparing them
beirx eval --dataset subset --lang en --retriever bm25 --output results/subset
beirx eval --dataset subset-es --lang es --retriever bm25 --output results/subset
beirx report results/subset --output report

echo "The report: $PWD/report/report.html (Markdown: report/report.md)"
