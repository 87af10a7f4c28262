"""``--dataset hf:ORG/NAME[@REVISION]``: Hugging Face Hub datasets as ordinary BEIR folders.

Four layouts are read, whichever the repository uses (checked against the real repositories):

* beirx exports and MTEB's parquet repositories (``mteb/<Task>``): README ``configs:`` naming ``corpus``,
  ``queries`` (or ``query``) and the qrels (``default`` or ``qrels``), as parquet, JSON lines or TSV;
* older MTEB repositories (``mteb/scifact``): ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``;
* BEIR (``BeIR/scifact``): ``corpus.jsonl.gz`` and ``queries.jsonl.gz``, with the qrels in a separate
  ``BeIR/scifact-qrels`` repository holding ``test.tsv``/``train.tsv``;
* BEIR-PL (``clarin-knext/scifact-pl``): the same, qrels in ``clarin-knext/scifact-pl-qrels``.

When a repository has no qrels, ``<repo>-qrels`` is fetched too. Downloads go through
``huggingface_hub.snapshot_download``, which honours ``HF_HUB_OFFLINE``, ``HF_ENDPOINT`` and its local
cache. The data are converted once into a BEIR folder under ``$BEIRX_HOME/hub/<org>/<name>/<commit>``,
keyed by the resolved commit (of both repositories), built in a temporary folder and renamed into
place, so a killed conversion never leaves a half folder that looks complete. The dataset's ``source``
records the exact commits (``hf:BeIR/scifact@<sha> qrels=hf:BeIR/scifact-qrels@<sha>``), which every
results file then carries. A local folder laid out like one of these repositories works the same way.
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from beirx.atomic import sibling_temp_dir, write_json
from beirx.data import beir_io
from beirx.data.dataset import BeirDataset
from beirx.data.front_matter import card_languages, read_front_matter
from beirx.data.records import Doc, Qrels, Query
from beirx.errors import BeirxError, DataError, require
from beirx.network import hub_call

log = logging.getLogger(__name__)

_SPLIT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_ID_KEYS = ("_id", "id")
_QID_KEYS = ("query-id", "query_id", "qid")
_DID_KEYS = ("corpus-id", "corpus_id", "doc_id", "docid", "pid")
_SCORE_KEYS = ("score", "relevance", "label")
_DATA_SUFFIXES = (".parquet", ".jsonl", ".jsonl.gz", ".json", ".json.gz", ".tsv", ".csv")


def parse_spec(spec: str) -> tuple[str, str | None]:
    """``org/name@rev`` -> ``("org/name", "rev")``; a local folder path is returned whole."""
    spec = spec.strip().removeprefix("hf:")
    if Path(spec).expanduser().is_dir() or "@" not in spec:
        return spec, None
    repo, _, revision = spec.rpartition("@")
    return repo, revision or None


# -- reading one repository snapshot -------------------------------------------------------------
def _data_files(root: Path, entry: Any) -> dict[str, list[Path]]:
    """A config's ``data_files`` as ``{split: [files]}``, globs expanded relative to ``root``."""
    if isinstance(entry, (str, list)) and not (isinstance(entry, list) and entry and isinstance(entry[0], dict)):
        entry = [{"split": "train", "path": entry}]
    if isinstance(entry, dict):
        entry = [{"split": k, "path": v} for k, v in entry.items()]
    out: dict[str, list[Path]] = {}
    for item in entry or []:
        patterns = item.get("path")
        patterns = [patterns] if isinstance(patterns, str) else list(patterns or [])
        files: list[Path] = []
        for pattern in patterns:
            pattern = pattern.lstrip("/")
            matches = sorted(p for p in root.glob(pattern) if p.is_file()) if any(c in pattern for c in "*?[") \
                else [root / pattern]
            if not matches or not all(m.is_file() for m in matches):
                raise DataError(root / pattern, "file named in the README's configs is missing")
            files.extend(matches)
        out.setdefault(str(item.get("split", "train")), []).extend(files)
    return out


def _configs(root: Path) -> dict[str, dict[str, list[Path]]]:
    meta = read_front_matter(root / "README.md")
    configs = meta.get("configs")
    if not isinstance(configs, list):
        return {}
    found = {}
    for config in configs:
        if isinstance(config, dict) and config.get("config_name"):
            found[str(config["config_name"])] = _data_files(root, config.get("data_files"))
    return found


def _first_existing(root: Path, names: tuple[str, ...]) -> Path | None:
    return next((root / n for n in names if (root / n).is_file()), None)


def _layout(root: Path) -> dict[str, dict[str, list[Path]]]:
    """``{"corpus": {split: files}, "queries": {...}, "qrels": {...}}`` for one snapshot (parts may be absent)."""
    configs = _configs(root)
    parts: dict[str, dict[str, list[Path]]] = {}
    if "corpus" in configs:
        parts["corpus"] = configs["corpus"]
    for name in ("queries", "query"):
        if name in configs:
            parts["queries"] = configs[name]
            break
    for name in ("default", "qrels"):
        if name in configs and name not in ("corpus", "queries"):
            parts["qrels"] = configs[name]
            break
    if "corpus" not in parts:
        path = _first_existing(root, ("corpus.jsonl", "corpus.jsonl.gz", "corpus.parquet"))
        shards = sorted((root / "corpus").glob("*.parquet")) if (root / "corpus").is_dir() else []
        if path or shards:
            parts["corpus"] = {"corpus": [path] if path else shards}
    if "queries" not in parts:
        path = _first_existing(root, ("queries.jsonl", "queries.jsonl.gz", "queries.parquet"))
        if path:
            parts["queries"] = {"queries": [path]}
    if "qrels" not in parts:
        folder = root / "qrels" if (root / "qrels").is_dir() else root
        files = [p for p in sorted(folder.iterdir()) if p.is_file() and p.name.endswith((".tsv", ".jsonl", ".parquet"))
                 and not p.name.startswith(("corpus", "queries"))]
        if files:
            qrels: dict[str, list[Path]] = {}
            for path in files:
                split = path.name.split(".", 1)[0]
                qrels.setdefault(split, []).append(path)
            parts["qrels"] = qrels
    return parts


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(row_number, record)`` from a parquet, JSON-lines or TSV/CSV file."""
    name = path.name.lower()
    if name.endswith(".parquet"):
        require("pyarrow", "hub", "reading parquet datasets")
        import pyarrow.parquet as pq

        number = 0
        for batch in pq.ParquetFile(path).iter_batches(batch_size=10_000):
            for record in batch.to_pylist():
                number += 1
                yield number, record
    elif name.endswith((".jsonl", ".jsonl.gz", ".json", ".json.gz")):
        with beir_io.open_text(path) as fh:
            for number, line in enumerate(fh, 1):
                if line.strip():
                    try:
                        record = json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise DataError(path, f"malformed JSON ({exc.msg})", number) from exc
                    yield number, record
    elif name.endswith((".tsv", ".csv")):
        with open(path, encoding="utf-8-sig", newline="") as fh:
            for number, record in enumerate(csv.DictReader(fh, delimiter="\t" if name.endswith(".tsv") else ","), 2):
                yield number, record
    else:
        raise DataError(path, f"unsupported data file type (expected one of {', '.join(_DATA_SUFFIXES)})")


def _field(record: dict[str, Any], keys: tuple[str, ...], path: Path, line: int, what: str) -> Any:
    for key in keys:
        if record.get(key) is not None:
            return record[key]
    raise DataError(path, f"missing {what} (looked for {', '.join(keys)})", line)


def _iter_docs(files: dict[str, list[Path]]) -> Iterator[Doc]:
    """Documents of every split's files, each ID once (MTEB repeats the corpus per split)."""
    seen: set[str] = set()
    for paths in files.values():
        for path in paths:
            for line, rec in _rows(path):
                doc_id = str(_field(rec, _ID_KEYS, path, line, "document id"))
                if doc_id in seen:
                    continue
                seen.add(doc_id)
                yield Doc(id=doc_id, text=str(rec.get("text") or ""), title=str(rec.get("title") or ""))


def _iter_queries(files: dict[str, list[Path]]) -> Iterator[Query]:
    seen: set[str] = set()
    for paths in files.values():
        for path in paths:
            for line, rec in _rows(path):
                qid = str(_field(rec, _ID_KEYS, path, line, "query id"))
                if qid not in seen:
                    seen.add(qid)
                    yield Query(id=qid, text=str(_field(rec, ("text", "query"), path, line, "query text")))


def _read_qrels(paths: list[Path]) -> Qrels:
    qrels: Qrels = {}
    for path in paths:
        if path.name.endswith(".tsv"):  # BEIR's own format and reader (header optional)
            for qid, docs in beir_io.read_qrels(path).items():
                qrels.setdefault(qid, {}).update(docs)
            continue
        for line, rec in _rows(path):
            qid = str(_field(rec, _QID_KEYS, path, line, "query id"))
            did = str(_field(rec, _DID_KEYS, path, line, "document id"))
            raw = _field(rec, _SCORE_KEYS, path, line, "relevance score")
            try:
                score = float(raw)
            except (TypeError, ValueError) as exc:
                raise DataError(path, f"relevance score must be a number, got {raw!r}", line) from exc
            if score != int(score):
                raise DataError(path, f"relevance score must be an integer, got {raw!r}", line)
            qrels.setdefault(qid, {})[did] = int(score)
    return qrels


# -- fetching --------------------------------------------------------------------------------------
def _snapshot(repo_id: str, revision: str | None) -> tuple[Path, str]:
    """Local files of ``repo_id`` at ``revision`` and the commit they are (``local-<hash>`` for folders)."""
    local = Path(repo_id).expanduser()
    if local.is_dir():
        h = hashlib.sha256()
        for path in sorted(p for p in local.rglob("*") if p.is_file()):
            stat = path.stat()
            h.update(f"{path.relative_to(local).as_posix()}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
        return local.resolve(), "local-" + h.hexdigest()[:16]
    if repo_id.startswith((".", "/", "~")) or repo_id.count("/") != 1:
        raise BeirxError(f"{repo_id}: no such folder, and not a Hub repository id (ORG/NAME)")
    require("huggingface_hub", "hub", f"downloading {repo_id} from the Hugging Face Hub")
    from huggingface_hub import snapshot_download

    with hub_call(f"get hf:{repo_id}{'@' + revision if revision else ''}",
                  "pass a local copy instead (hf:/path/to/local/copy, or a BEIR folder with --dataset DIR)"):
        # HF_ENDPOINT is read here, not at import, so a self-hosted hub set after start-up is honoured.
        path = Path(snapshot_download(repo_id=repo_id, repo_type="dataset", revision=revision,
                                      endpoint=os.environ.get("HF_ENDPOINT") or None))
    return path, path.name  # snapshots/<commit>


def card_folder(spec: str) -> Path:
    """The local files (downloaded when needed) of ``org/name[@rev]``, e.g. to read its dataset card."""
    repo, revision = parse_spec(spec)
    return _snapshot(repo, revision)[0]


def _companion_qrels(repo_id: str) -> str:
    """``BeIR/scifact`` -> ``BeIR/scifact-qrels`` (a local folder: the sibling ``<folder>-qrels``)."""
    return repo_id.rstrip("/") + "-qrels"


def _target_name(repo_id: str) -> Path:
    local = Path(repo_id).expanduser()
    if local.is_dir():
        return Path("local") / re.sub(r"[^A-Za-z0-9._-]+", "_", local.resolve().name)
    from beirx.paths import check_repo_id

    return Path(*check_repo_id(repo_id, "hf: repository").split("/"))


def _dataset_name(repo_id: str, meta: dict[str, Any]) -> str:
    from beirx.data import catalogue

    beirx_meta = meta.get("beirx") if isinstance(meta.get("beirx"), dict) else {}
    if beirx_meta.get("dataset"):
        return str(beirx_meta["dataset"])
    name = Path(repo_id).name if Path(repo_id).expanduser().is_dir() else repo_id.split("/")[-1]
    info = catalogue.lookup(repo_id) or catalogue.lookup(name)
    return info.name if info else name


def _convert(target: Path, layout: dict[str, dict[str, list[Path]]], provenance: dict[str, Any]) -> None:
    """Write the BEIR folder into a temporary sibling of ``target`` and rename it into place."""
    tmp = sibling_temp_dir(target)
    try:
        n_docs = beir_io.write_corpus(tmp / "corpus.jsonl", _iter_docs(layout["corpus"]))
        n_queries = beir_io.write_queries(tmp / "queries.jsonl", _iter_queries(layout["queries"]))
        for split, paths in layout["qrels"].items():
            if not _SPLIT.match(split):
                raise BeirxError(f"unusable qrels split name {split!r} in {paths[0]}")
            qrels = _read_qrels(paths)
            if not qrels:
                raise DataError(paths[0], f"no relevance judgements for split {split!r}")
            beir_io.write_qrels(tmp / "qrels" / f"{split}.tsv", qrels)
        write_json(tmp / "hub_source.json", {**provenance, "documents": n_docs, "queries": n_queries})
        try:
            os.replace(tmp, target)
        except OSError:
            if not target.is_dir():
                raise
            shutil.rmtree(tmp)  # a concurrent conversion finished first: keep its (identical) result
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def load_hub_dataset(repo_id: str, lang: str = "en", revision: str | None = None) -> BeirDataset:
    """The Hub dataset ``repo_id`` (``org/name``, ``org/name@rev`` or a local folder) as a BeirDataset."""
    spec_repo, spec_rev = parse_spec(repo_id)
    revision = revision or spec_rev
    root, commit = _snapshot(spec_repo, revision)
    layout = _layout(root)
    missing = [part for part in ("corpus", "queries") if part not in layout]
    if missing:
        configs = sorted(_configs(root)) or ["none"]
        raise BeirxError(f"hf:{spec_repo}: no {' or '.join(missing)} found (README configs: {', '.join(configs)}; "
                         "expected configs corpus/queries/default or corpus.jsonl[.gz], queries.jsonl[.gz])")
    source = f"hf:{spec_repo}@{commit}" if not commit.startswith("local-") else f"{root}@{commit}"
    key = commit
    provenance: dict[str, Any] = {"repo": spec_repo, "revision_requested": revision, "commit": commit}
    if "qrels" not in layout:
        qrels_repo = _companion_qrels(spec_repo)
        try:
            qroot, qcommit = _snapshot(qrels_repo, None)
        except BeirxError as exc:
            raise BeirxError(f"hf:{spec_repo} has no qrels, and its qrels repository {qrels_repo} could not be "
                             f"loaded: {exc}") from exc
        qlayout = _layout(qroot)
        if "qrels" not in qlayout:
            raise BeirxError(f"neither hf:{spec_repo} nor {qrels_repo} holds qrels (<split>.tsv files)")
        layout["qrels"] = qlayout["qrels"]
        local_qrels = qcommit.startswith("local-")
        source += f" qrels={qroot}@{qcommit}" if local_qrels else f" qrels=hf:{qrels_repo}@{qcommit}"
        key += f"+{qcommit}"
        provenance.update({"qrels_repo": qrels_repo, "qrels_commit": qcommit})
    meta = read_front_matter(root / "README.md")
    card_langs = card_languages(meta)
    from beirx.language_packs import get_pack

    if len(card_langs) == 1 and str(card_langs[0]).lower() not in {lang.lower(), get_pack(lang).iso3}:
        log.warning("hf:%s declares language %r but is being loaded as %r (pass --lang %s for its analyzer)",
                    spec_repo, card_langs[0], lang, card_langs[0])
    from beirx.data.cache import cache_dir

    target = cache_dir("hub") / _target_name(spec_repo) / key
    if not target.is_dir():
        log.info("converting hf:%s (%s) into a BEIR folder at %s", spec_repo, key, target)
        _convert(target, layout, {**provenance, "source": source})
    return BeirDataset(target, name=_dataset_name(spec_repo, meta), lang=lang, source=source)
