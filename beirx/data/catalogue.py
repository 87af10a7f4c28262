"""The BEIR datasets beirx knows by name: where they come from and how they are evaluated.

Sources (checked when this table was written; every value below comes from one of them):

* Corpus sizes, test-query counts, task and domain: Table 1 of the BEIR paper (Thakur et al., 2021,
  arXiv:2104.08663). The 12 CQADupStack subset counts are MTEB's descriptive statistics for the
  ``CQADupstack*Retrieval`` tasks; they sum to BEIR's 457,199 documents and 13,145 queries.
* Archive names, public/non-public status and zip MD5s: the datasets table of BEIR's README
  (github.com/beir-cellar/beir). No SHA-256 is published there, so ``sha256`` is left ``None``; the
  MD5 is verified on every download.
* Access instructions for the four non-public datasets: BEIR's ``examples/dataset/README.md``.
* Licences: MTEB's task metadata (mteb 2.26); "not specified" is MTEB's own wording.
* BEIR-PL Hub ids (``clarin-knext/...``): MTEB's Polish task references and BEIR-PL listings. No
  Touché-2020, FEVER or Climate-FEVER copy under that name could be confirmed, so those are ``None``.

BEIR counts 18 zero-shot datasets (``zero_shot=True``); MS MARCO is its in-domain training set and is
catalogued too. CQADupStack is one dataset in that count but ships as 12 StackExchange subsets inside
one ``cqadupstack.zip``; each subset is its own entry (``cqadupstack/android`` ...), and BEIR reports
the mean over the 12.

Identical query/document IDs (``ignore_identical_ids``): in ArguAna and Quora the queries are also
corpus documents, so a query retrieves itself at rank 1 unless that hit is dropped (BEIR issues #37
and #72). BEIR and MTEB disagree on where to apply the drop:

* BEIR's ``EvaluateRetrieval.evaluate`` has ``ignore_identical_ids=True`` by default, for every
  dataset (:data:`BEIR_IGNORE_IDENTICAL_IDS`).
* MTEB (``AbsTaskRetrieval.ignore_identical_ids``, default ``False``) sets it per task: ``True`` for
  ArguAna, QuoraRetrieval, FiQA2018, FEVER and MSMARCO, ``False`` for the other BEIR tasks, including
  CQADupStack and SCIDOCS, whose queries and documents share one ID space (StackExchange post IDs,
  Semantic Scholar paper IDs). MTEB's own Quora-PL task has ``False`` while Quora has ``True``.

beirx follows MTEB's per-task setting (the convention of current leaderboards) and keeps it for every
language of a dataset, since translation keeps the IDs. Datasets MTEB has no BEIR task for (the four
non-public ones) use ``False``: their queries are topics or headlines, not corpus documents.
``ignore_identical_ids_for(name, convention="beir")`` gives BEIR's blanket default instead.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass

from beirx.artifacts.subset import SUFFIX as SUBSET_SUFFIX
from beirx.errors import BeirxError

BEIR_BASE_URL = "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets"
BASE_URL_ENV = "BEIRX_BEIR_URL"
BEIR_IGNORE_IDENTICAL_IDS = True  # BEIR's EvaluateRetrieval.evaluate default, applied to every dataset


@dataclass(frozen=True)
class DatasetInfo:
    """One catalogue entry. ``num_docs``/``num_queries`` are the corpus size and test-split query count."""

    name: str
    title: str
    task: str
    domain: str
    num_docs: int
    num_queries: int
    license: str
    archive: str  # BEIR's archive name: <archive>.zip under the base URL, extracted to datasets/<archive>
    downloadable: bool = True
    subdir: str = ""  # folder inside the extracted archive ("" = the archive folder itself)
    test_split: str = "test"
    md5: str | None = None
    sha256: str | None = None
    hf_id: str | None = None
    hf_qrels_id: str | None = None
    beir_pl_id: str | None = None
    mteb_task: str | None = None
    ignore_identical_ids: bool = False
    zero_shot: bool = True
    access: str = ""  # how to obtain a dataset that is not publicly downloadable

    @property
    def group(self) -> str | None:
        """``cqadupstack`` for the CQADupStack subsets, else ``None``."""
        return self.archive if self.subdir else None

    def url(self, base_url: str | None = None) -> str | None:
        """The archive URL under ``base_url`` (default: ``$BEIRX_BEIR_URL`` or BEIR's public server)."""
        if not self.downloadable:
            return None
        return f"{beir_base_url(base_url)}/{self.archive}.zip"


def beir_base_url(override: str | None = None) -> str:
    """Where archives are fetched from: the argument, else ``$BEIRX_BEIR_URL``, else BEIR's server."""
    return (override or os.environ.get(BASE_URL_ENV) or BEIR_BASE_URL).rstrip("/")


def _beir(name: str, title: str, task: str, domain: str, docs: int, queries: int, license: str, md5: str | None,
          **extra) -> DatasetInfo:
    extra.setdefault("hf_id", f"BeIR/{name}")
    extra.setdefault("hf_qrels_id", f"BeIR/{name}-qrels")
    return DatasetInfo(name=name, title=title, task=task, domain=domain, num_docs=docs, num_queries=queries,
                       license=license, archive=name, md5=md5, **extra)


def _restricted(name: str, title: str, task: str, domain: str, docs: int, queries: int, access: str) -> DatasetInfo:
    return DatasetInfo(name=name, title=title, task=task, domain=domain, num_docs=docs, num_queries=queries,
                       license="restricted (see access)", archive=name, downloadable=False, access=access)


_CQA_MD5 = "4e41456d7df8ee7760a7f866133bda78"

# (subset, documents, test queries) from MTEB's CQADupstack*Retrieval descriptive statistics.
_CQA_SUBSETS = [
    ("android", 22_998, 699), ("english", 40_221, 1_570), ("gaming", 45_301, 1_595), ("gis", 37_637, 885),
    ("mathematica", 16_705, 804), ("physics", 38_316, 1_039), ("programmers", 32_176, 876),
    ("stats", 42_269, 652), ("tex", 68_184, 2_906), ("unix", 47_382, 1_072), ("webmasters", 17_405, 506),
    ("wordpress", 48_605, 541),
]


def _cqa(sub: str, docs: int, queries: int) -> DatasetInfo:
    # BeIR/cqadupstack on the Hub merges the 12 subsets, so no per-subset BeIR id is given.
    return DatasetInfo(name=f"cqadupstack/{sub}", title=f"CQADupStack ({sub})", task="Duplicate-Question Retrieval",
                       domain="StackEx.", num_docs=docs, num_queries=queries, license="apache-2.0",
                       archive="cqadupstack", subdir=sub, md5=_CQA_MD5,
                       beir_pl_id=f"clarin-knext/cqadupstack-{sub}-pl",
                       mteb_task=f"CQADupstack{sub.capitalize()}Retrieval")


CATALOGUE: list[DatasetInfo] = [
    _beir("msmarco", "MS MARCO", "Passage-Retrieval", "Misc.", 8_841_823, 6_980, "msr-la-nc",
          "444067daf65d982533ea17ebd59501e4", test_split="dev", zero_shot=False,
          beir_pl_id="clarin-knext/msmarco-pl", mteb_task="MSMARCO", ignore_identical_ids=True),
    _beir("trec-covid", "TREC-COVID", "Bio-Medical IR", "Bio-Medical", 171_332, 50, "not specified",
          "ce62140cb23feb9becf6270d0d1fe6d1", beir_pl_id="clarin-knext/trec-covid-pl", mteb_task="TRECCOVID"),
    _beir("nfcorpus", "NFCorpus", "Bio-Medical IR", "Bio-Medical", 3_633, 323, "not specified",
          "a89dba18a62ef92f7d323ec890a0d38d", beir_pl_id="clarin-knext/nfcorpus-pl", mteb_task="NFCorpus"),
    _restricted("bioasq", "BioASQ", "Bio-Medical IR", "Bio-Medical", 14_914_602, 500,
                "register at bioasq.org; corpus from BioASQ task 9a (title + abstractText), questions and "
                "qrels from BioASQ 8B; see examples/dataset/README.md in the BEIR repository"),
    _beir("nq", "NQ", "Question Answering", "Wikipedia", 2_681_468, 3_452, "cc-by-nc-sa-3.0",
          "d4d3d2e48787a744b6f6e691ff534307", beir_pl_id="clarin-knext/nq-pl", mteb_task="NQ"),
    _beir("hotpotqa", "HotpotQA", "Question Answering", "Wikipedia", 5_233_329, 7_405, "cc-by-sa-4.0",
          "f412724f78b0d91183a0e86805e16114", beir_pl_id="clarin-knext/hotpotqa-pl", mteb_task="HotpotQA"),
    _beir("fiqa", "FiQA-2018", "Question Answering", "Finance", 57_638, 648, "not specified",
          "17918ed23cd04fb15047f73e6c3bd9d9", beir_pl_id="clarin-knext/fiqa-pl", mteb_task="FiQA2018",
          ignore_identical_ids=True),
    _restricted("signal1m", "Signal-1M (RT)", "Tweet-Retrieval", "Twitter", 2_866_316, 97,
                "sign up at research.signal-ai.com for the Signal-1M queries and qrels; the tweets must be "
                "fetched by ID (newsir16-data); see examples/dataset/README.md in the BEIR repository"),
    _restricted("trec-news", "TREC-NEWS", "News Retrieval", "News", 594_977, 57,
                "apply to NIST for the Washington Post corpus (trec.nist.gov/data/wapost); topics and qrels "
                "from the TREC 2019 News Track; see examples/dataset/README.md in the BEIR repository"),
    _restricted("robust04", "Robust04", "News Retrieval", "News", 528_155, 249,
                "apply to NIST for TREC disks 4 and 5 (trec.nist.gov/data/cd45); queries and qrels from "
                "ir_datasets 'trec-robust04' (descriptions as queries); see the BEIR repository"),
    _beir("arguana", "ArguAna", "Argument Retrieval", "Misc.", 8_674, 1_406, "cc-by-sa-4.0",
          "8ad3e3c2a5867cdced806d6503f29b99", beir_pl_id="clarin-knext/arguana-pl", mteb_task="ArguAna",
          ignore_identical_ids=True),
    _beir("webis-touche2020", "Touché-2020", "Argument Retrieval", "Misc.", 382_545, 49, "cc-by-sa-4.0",
          "46f650ba5a527fc69e0a6521c5a23563", mteb_task="Touche2020"),
    *[_cqa(sub, docs, queries) for sub, docs, queries in _CQA_SUBSETS],
    _beir("quora", "Quora", "Duplicate-Question Retrieval", "Quora", 522_931, 10_000, "not specified",
          "18fb154900ba42a600f84b839c173167", beir_pl_id="clarin-knext/quora-pl", mteb_task="QuoraRetrieval",
          ignore_identical_ids=True),
    _beir("dbpedia-entity", "DBPedia", "Entity-Retrieval", "Wikipedia", 4_635_922, 400, "mit",
          "c2a39eb420a3164af735795df012ac2c", beir_pl_id="clarin-knext/dbpedia-pl", mteb_task="DBPedia"),
    _beir("scidocs", "SCIDOCS", "Citation-Prediction", "Scientific", 25_657, 1_000, "cc-by-sa-4.0",
          "38121350fc3a4d2f48850f6aff52e4a9", beir_pl_id="clarin-knext/scidocs-pl", mteb_task="SCIDOCS"),
    _beir("fever", "FEVER", "Fact Checking", "Wikipedia", 5_416_568, 6_666, "cc-by-nc-sa-3.0",
          "5a818580227bfb4b35bb6fa46d9b6c03", mteb_task="FEVER", ignore_identical_ids=True),
    _beir("climate-fever", "Climate-FEVER", "Fact Checking", "Wikipedia", 5_416_593, 1_535, "cc-by-sa-4.0",
          "8b66f0a9126c521bae2bde127b4dc99d", mteb_task="ClimateFEVER"),
    _beir("scifact", "SciFact", "Fact Checking", "Scientific", 5_183, 300, "cc-by-nc-4.0",
          "5f7d1de60b170fc8027bb7898e2efca1", beir_pl_id="clarin-knext/scifact-pl", mteb_task="SciFact"),
]

_BY_NAME: dict[str, DatasetInfo] = {info.name: info for info in CATALOGUE}
GROUPS: dict[str, list[str]] = {
    group: [info.name for info in CATALOGUE if info.group == group]
    for group in dict.fromkeys(info.group for info in CATALOGUE if info.group)
}


def names() -> list[str]:
    """Catalogue names in table order."""
    return list(_BY_NAME)


def close_matches(name: str, n: int = 5) -> list[str]:
    """Catalogue names (and groups) that look like ``name``: substrings first, then difflib's matches."""
    key = name.strip().lower()
    candidates = list(_BY_NAME) + list(GROUPS)
    found = [c for c in candidates if key and (key in c or c in key)]
    found += [c for c in difflib.get_close_matches(key, candidates, n=n, cutoff=0.6) if c not in found]
    return found[:n]


def get(name: str) -> DatasetInfo:
    """The entry for ``name``; a :class:`BeirxError` with suggestions when there is none."""
    info = _BY_NAME.get(name.strip().lower())
    if info is not None:
        return info
    if name.strip().lower() in GROUPS:
        members = GROUPS[name.strip().lower()]
        raise BeirxError(f"{name!r} is a group of {len(members)} datasets evaluated separately (BEIR reports their "
                         f"mean): {', '.join(members)}")
    hint = close_matches(name)
    suggestion = f"; did you mean: {', '.join(hint)}?" if hint else ""
    raise BeirxError(f"unknown dataset {name!r}{suggestion} (`beirx datasets` lists the catalogue)")


def lookup(name: str) -> DatasetInfo | None:
    """The entry a dataset label refers to, tolerating Hub ids and language suffixes, or ``None``.

    Accepts ``scifact``, ``SciFact``, ``BeIR/scifact``, ``clarin-knext/scifact-pl``, ``scifact-pl`` (a
    translated folder's name), ``cqadupstack/android-pl`` and a subset's name (``scifact-subset``, also
    translated: ``scifact-subset-pl``), which keeps its family's split and evaluation protocol.
    """
    key = name.strip().lower().removeprefix("hf:")
    if SUBSET_SUFFIX in key:
        stem, _, rest = key.rpartition(SUBSET_SUFFIX)
        found = lookup(stem + rest)
        if found is not None:
            return found
    if key in _BY_NAME:
        return _BY_NAME[key]
    for info in CATALOGUE:
        if key in {(info.hf_id or "").lower(), (info.beir_pl_id or "").lower()}:
            return info
    key = key.rsplit("/", 1)[-1] if key.startswith(("beir/", "clarin-knext/")) else key
    stem, sep, lang = key.rpartition("-")
    if sep and 2 <= len(lang) <= 3 and lang.isalpha() and stem in _BY_NAME:
        return _BY_NAME[stem]
    return None


def test_split_for(name: str) -> str:
    """The split BEIR reports for ``name`` (``dev`` for MS MARCO); ``test`` for datasets not catalogued."""
    info = lookup(name)
    return info.test_split if info else "test"


def ignore_identical_ids_for(name: str, convention: str = "mteb") -> bool:
    """Whether to drop documents whose ID equals the query ID when evaluating ``name``.

    ``convention="mteb"`` (beirx's default) is MTEB's per-task setting, ``False`` for datasets not
    catalogued; ``"beir"`` is BEIR's evaluation default, ``True`` everywhere. See the module docstring.
    """
    if convention == "beir":
        return BEIR_IGNORE_IDENTICAL_IDS
    if convention != "mteb":
        raise BeirxError(f"unknown identical-IDs convention {convention!r}; choose 'mteb' or 'beir'")
    info = lookup(name)
    return info.ignore_identical_ids if info else False
