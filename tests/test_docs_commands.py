"""Docs that run: every shell and Python block of README.md and docs/*.md is marked, checked against beirx's
own argument parser, and, when marked ``run``, executed on this machine (docs/docs-tests.md).

Run blocks see a scratch ``HOME`` whose ``~/.cache/beirx`` (beirx's default cache) already holds the
catalogue's ``scifact``, and a ``../shared`` whose ``data/beir/scifact`` is the same folder: a slice of the real
SciFact (the first 60 test queries with every judged document, 100 documents in all, each abstract cut to its
first 48 words), so every command runs for real in seconds. Hub model ids resolve, offline, to the real models
the other tests use, laid out in that ``HOME``'s Hugging Face cache (_hub_models), so commands run as written.
"""

from __future__ import annotations

import json
import os
import resource
import shlex
import shutil
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from docs_blocks import REPO, Block, all_blocks, blocks, commands, counts, problems
from docs_runner import run_python, run_shell
from fake_hub import TOKEN, FakeHub

BLOCKS = all_blocks()
RUN_PAGES = sorted({b.path for b in BLOCKS if b.runs})
SLICE_QUERIES, SLICE_DOCS, SLICE_WORDS = 60, 100, 48
# where a Hugging Face cache may be pointed; the commands see only the scratch one
HF_CACHE_VARIABLES = ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE",
                      "SENTENCE_TRANSFORMERS_HOME")


def _hub_models(e5_small: Path) -> dict[str, Path]:
    """Hub ids used in run blocks (or by default, e.g. the subset recipe's pool) -> a local folder of the same
    real model (the Hub is unreachable here)."""
    return {"intfloat/multilingual-e5-small": e5_small}


def _hub_cache(hub: Path, models: dict[str, Path]) -> None:
    """Each model folder as the snapshot of its Hub id in a Hugging Face cache (``refs/main`` naming a commit,
    ``snapshots/COMMIT/`` linking every file), which ``snapshot_download`` and ``hf_hub_download`` find offline."""
    for repo_id, folder in models.items():
        repo = hub / f"models--{repo_id.replace('/', '--')}"
        commit = "0" * 40
        (repo / "refs").mkdir(parents=True)
        (repo / "refs" / "main").write_text(commit, encoding="utf-8")
        for source in folder.rglob("*"):
            if source.is_file():
                target = repo / "snapshots" / commit / source.relative_to(folder)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.symlink_to(source.resolve())


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_every_block_is_marked_and_its_commands_exist(block: Block):
    assert problems(block) == []


def test_a_broken_flag_is_caught():
    """The README's training command with one flag misspelled: the check names the file, the line and the
    flag."""
    readme = REPO / "README.md"
    text = readme.read_text(encoding="utf-8")
    assert text.count("--batch-size 32") == 1
    broken = text.replace("--batch-size 32", "--batch-sise 32")
    line = next(i for i, row in enumerate(broken.splitlines(), 1) if "--batch-sise" in row)
    start = next(i for i in range(line, 0, -1) if broken.splitlines()[i - 1].startswith("OMP_NUM_THREADS"))
    found = [p for b in blocks(readme, broken) for p in problems(b)]
    assert found == [f"README.md:{start}: beirx: error: unrecognized arguments: --batch-sise 32"]


@pytest.mark.parametrize("text,expected", [
    ("<!-- docs-test: run -->\n```bash\nbeirx evaluate --dataset scifact\n```\n",
     "x.md:3: beirx: error: argument COMMAND: invalid choice: 'evaluate' (choose from "),
    ("<!-- docs-test: needs gpu -->\n```bash\nbeirx eval --dataset d \\\n    --top-k ten\n```\n",
     "x.md:3: beirx eval: error: argument --top-k: "),
    ("<!-- docs-test: needs gpu -->\n```bash\nbeirx subset check --check bm25 && beirx report r.json --test z\n```\n",
     "x.md:3: beirx report: error: argument --test: invalid choice: 'z' (choose from "),
    ("```bash\nbeirx eval --dataset d\n```\n",
     "x.md:2: a ```bash block needs a marker on the line above its fence: <!-- docs-test: run --> or "),
    ("<!-- docs-test: run -->\n```bash\nbeirx eval --dataset 'd\n```\n", "x.md:3: not valid shell: "),
    ("<!-- docs-test: run -->\n```python\nfrom beirx.evaluate.runner import run_plans\n```\n",
     "x.md:3: beirx.evaluate.runner has no 'run_plans'"),
])
def test_what_the_check_catches(text, expected):
    (block,) = blocks(REPO / "x.md", text)
    found = problems(block)
    assert len(found) == 1 and found[0].startswith(expected), found


def test_commands_of_a_block():
    (block,) = blocks(REPO / "x.md", "<!-- docs-test: run -->\n```bash\n"
                                    "DATA=../d  # the data\nX=1 beirx eval --dataset $DATA \\\n    --name 'a b' > out.txt\n"
                                    "cmp a b && beirx schema results | head -1; echo '#' # done\n```\n")
    assert commands(block) == [(4, ["beirx", "eval", "--dataset", "$DATA", "--name", "a b"]),
                               (6, ["cmp", "a", "b"]), (6, ["beirx", "schema", "results"]), (6, ["head", "-1"]),
                               (6, ["echo", "#"])]
    assert counts([block]) == {"blocks run": 1, "commands run": 5, "beirx commands run": 2, "blocks checked": 0,
                               "commands checked": 0, "beirx commands checked": 0}


# -- running the run blocks -----------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def scifact_slice(scifact_dir, tmp_path_factory) -> Path:
    """The first SLICE_QUERIES test queries of the real SciFact with every judged document, filled up to
    SLICE_DOCS documents in file order, each text cut to its first SLICE_WORDS words (encoding is most of the
    run blocks' time); train qrels restricted to those documents."""
    out = tmp_path_factory.mktemp("docs-data") / "scifact"
    (out / "qrels").mkdir(parents=True)
    test_rows = (scifact_dir / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()
    kept_queries: list[str] = []
    for row in test_rows[1:]:
        qid = row.split("\t")[0]
        if qid not in kept_queries and len(kept_queries) < SLICE_QUERIES:
            kept_queries.append(qid)
    tests = [r for r in test_rows[1:] if r.split("\t")[0] in kept_queries]
    docs = {r.split("\t")[1] for r in tests}
    lines = []
    for line in (scifact_dir / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        if doc["_id"] in docs or len(docs) < SLICE_DOCS:
            docs.add(doc["_id"])
            lines.append(json.dumps({**doc, "text": " ".join(doc["text"].split()[:SLICE_WORDS])}))
    (out / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    train_rows = (scifact_dir / "qrels" / "train.tsv").read_text(encoding="utf-8").splitlines()
    trains = [r for r in train_rows[1:] if r.split("\t")[1] in docs]
    (out / "qrels" / "test.tsv").write_text("\n".join([test_rows[0], *tests]) + "\n", encoding="utf-8")
    (out / "qrels" / "train.tsv").write_text("\n".join([train_rows[0], *trains]) + "\n", encoding="utf-8")
    wanted = {r.split("\t")[0] for r in tests + trains}
    queries = [q for q in (scifact_dir / "queries.jsonl").read_text(encoding="utf-8").splitlines()
               if json.loads(q)["_id"] in wanted]
    (out / "queries.jsonl").write_text("\n".join(queries) + "\n", encoding="utf-8")
    return out


@pytest.fixture(scope="session")
def docs_machine(scifact_slice, e5_small, tmp_path_factory) -> dict:
    """The scratch HOME (its ~/.cache/beirx shared by every page, so a model encodes the slice once; its
    ~/.cache/huggingface holding the Hub models), the ``../shared`` every page's folder sees, and the
    environment of the commands."""
    root = tmp_path_factory.mktemp("docs-run")
    shutil.copytree(scifact_slice, root / "shared" / "data" / "beir" / "scifact")
    shutil.copytree(scifact_slice, root / "home" / ".cache" / "beirx" / "datasets" / "scifact")
    hf_home = root / "home" / ".cache" / "huggingface"
    _hub_cache(hf_home / "hub", _hub_models(e5_small))
    env = {k: v for k, v in os.environ.items() if k != "BEIRX_HOME" and not k.startswith(HF_CACHE_VARIABLES)}
    env.update(HOME=str(root / "home"), HF_HOME=str(hf_home), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false",
               PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    return {"root": root, "env": env}


def _cpu_seconds() -> float:
    """CPU time of this process and its finished children: on a shared machine a fairer measure of what a
    block costs than its wall time."""
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))


@contextmanager
def _page_env(page: Path, env: dict[str, str]):
    """The environment of a page's commands: publishing.md pushes to a fake Hub on 127.0.0.1 (HF_ENDPOINT), as
    a reader logged in (HF_TOKEN) would to the real one."""
    if page.name != "publishing.md":
        yield env
        return
    with FakeHub() as hub:
        yield {**env, "HF_ENDPOINT": hub.url, "HF_TOKEN": TOKEN, "HF_HUB_OFFLINE": "0"}


@pytest.mark.slow
@pytest.mark.parametrize("page", RUN_PAGES, ids=[p.name for p in RUN_PAGES])
def test_the_run_blocks_of_a_page_run(page: Path, docs_machine):
    page_dir = docs_machine["root"] / "pages" / page.stem
    work = page_dir / "work"
    work.mkdir(parents=True)
    (page_dir / "shared").symlink_to(docs_machine["root"] / "shared")  # ../shared from the page's folder
    shutil.copy(REPO / "quickstart.sh", work)  # a run block starts where a clone's root would be
    with _page_env(page, docs_machine["env"]) as env:
        _run_page(page, work, env)


def _run_page(page: Path, work: Path, env: dict[str, str]) -> None:
    for block in (b for b in BLOCKS if b.path == page and b.runs):
        text = block.text
        start, cpu = time.perf_counter(), _cpu_seconds()
        if block.shell:
            done = run_shell(text, work, env, timeout=900)
        else:
            done = run_python(text, block.where, work, env)
        print(f"{block.where}: {time.perf_counter() - start:.1f} s ({_cpu_seconds() - cpu:.1f} s CPU)")
        for argv, rc, seconds in done.calls:
            print(f"    {seconds:6.1f} s  rc {rc}  beirx {shlex.join(argv)}")
        assert done.returncode == 0, f"{block.where} failed ({done.returncode}):\n{done.stdout[-3000:]}\n" \
                                     f"{done.stderr[-5000:]}"
