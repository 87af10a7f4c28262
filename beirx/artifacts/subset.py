"""The subset manifest (``subset.json``): how ``beirx subset`` cut a small benchmark out of a large one, and how
well the small one ranks systems like the large one.

A subset (NanoBEIR-style) keeps a seeded sample of judged queries and a corpus made of every document judged
for them, the union of the top documents of pooling systems and a seeded random fill. The manifest records
the source (name, language, checksum), the method (seed, sizes, pooling systems with their revisions, the pool
depth reached), what was kept, and, once ``beirx subset check`` has run, the ranking check: each system's
score on the full set and on the subset, Kendall's tau between the two orderings, the discriminative power the
subset keeps and the pool bias a system that did not pool should expect (leave-one-family-out).

The name of a subset is its source's family name plus :data:`SUFFIX` (``scifact-subset``), so results on
the subset never mix with results on the full set, while the catalogue still knows the family
(:func:`beirx.data.catalogue.lookup` reads through the suffix).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beirx.artifacts.base import Artifact, fld, optional, utc_now
from beirx.artifacts.manifest import DatasetSide, TranslationManifest

SCHEMA = "beirx.subset/3"
READS = ("beirx.subset/1", "beirx.subset/2")  # older versions read as they are: every field added since is optional
FILENAME = "subset.json"
SUFFIX = "-subset"


def subset_name(family: str) -> str:
    """The dataset name of a subset of ``family`` (a subset of a subset keeps one suffix)."""
    return family if family.endswith(SUFFIX) else family + SUFFIX


@dataclass(kw_only=True)
class PoolSystem:
    """A system whose top documents were pooled into the corpus."""

    spec: str = fld("as given on the command line: a retriever (bm25, dense:MODEL ...) or a TREC run file")
    label: str = fld("the system's readable label")
    description: dict[str, Any] = fld("everything that determines its run: retriever, model and revision, or the "
                                      "run file's path and sha256")


@dataclass(kw_only=True)
class SubsetMethod:
    """How queries and documents were chosen."""

    queries: int = fld("queries asked for (with queries_cap: the cap)")
    stratify: bool = fld("queries sampled within strata of equal number of relevant documents, in proportion")
    seed: int = fld("seed of the query sample and of the random fill")
    depth: int = fld("pool depth asked for (top documents per query and system)")
    depth_reached: int = fld("pool depth actually pooled: lower than depth when judged + pooled documents would "
                             "exceed max_docs (the same depth for every query and system)")
    max_docs: int | None = fld("corpus size asked for; the random fill tops the corpus up to it (null: no fill)")
    queries_cap: bool | None = optional("true: every judged query up to 'queries' was kept (the default recipe), "
                                        "not a sample of that size")


@dataclass(kw_only=True)
class SubsetCounts:
    """What the subset holds."""

    candidate_queries: int = fld("judged queries of the split with a relevant document and a text")
    queries: int = fld("queries kept")
    strata: dict[str, int] = fld("queries kept per number of relevant documents")
    qrels: int = fld("judgements kept (every judgement of the kept queries)")
    source_documents: int = fld("documents in the source corpus")
    judged: int = fld("documents judged for the kept queries and present in the corpus (never dropped)")
    judged_missing: int = fld("documents judged for the kept queries but absent from the source corpus")
    pooled: int = fld("documents pooled by the systems that are not judged")
    random: int = fld("documents of the random fill")
    documents: int = fld("documents in the subset's corpus")
    characters: int | None = optional("characters of the kept titles, texts and query texts: what a translator reads "
                                      "(beirx translate --dry-run adds segments, tokens and money)")
    source_characters: int | None = optional("the same count over the source's whole corpus and queries file")


@dataclass(kw_only=True)
class SystemAgreement:
    """One system's score on the full set and on the subset, and its rank on each (1 = best)."""

    label: str = fld("the system")
    full: float = fld("score on the full set")
    subset: float = fld("score on the subset")
    full_rank: int = fld("rank on the full set")
    subset_rank: int = fld("rank on the subset")
    full_results: str | None = optional("results document on the full set")
    subset_results: str | None = optional("results document on the subset")
    pooled: bool | None = optional("took part in pooling (itself, or every input of a fusion, the first stage of a "
                                   "reranker); false: its own non-relevant top documents may be missing from the "
                                   "subset, which flatters it (pool bias); null: not known (a version-1 check)")
    families: list[str] | None = optional("the pooling families it is made of (beirx.subsets.families: lexical, one "
                                          "per dense or sparse model, ...); null: not known (an older check)")
    family_pooled: bool | None = optional("every family it is made of pooled (a twin of a pooling system, e.g. the "
                                          "same encoder on ONNX Runtime, counts as pooled); false: it stands where a "
                                          "system that did not pool stands (pool bias)")


@dataclass(kw_only=True)
class Resolution:
    """Which differences a side separates: every pair of systems compared by a paired test over its queries."""

    test: str = fld("the paired test, its settings and the level (per pair, uncorrected)")
    queries: int = fld("queries the test pairs over")
    smallest_separated: float | None = fld("the smallest |difference| of the metric separated at the level: every "
                                           "smaller difference is unresolved (null: no pair is separated)")
    largest_unresolved: float | None = fld("the largest |difference| not separated (null: every pair is)")


@dataclass(kw_only=True)
class Swap:
    """A pair of systems ordered differently on the subset, and whether that is noise or a disagreement."""

    first: str = fld("the system ranked higher on the full set")
    second: str = fld("the other system")
    full_difference: float = fld("first - second on the full set (> 0)")
    subset_difference: float = fld("first - second on the subset (< 0)")
    full_p: float = fld("p-value of the pair's paired test on the full set")
    subset_p: float = fld("p-value of the pair's paired test on the subset")
    verdict: str = fld("'within the expected pool bias' (the system whose family did not pool gained, by no more "
                       "than the expected pool bias), 'noise on both', 'noise on the subset', 'noise on the full set' "
                       "(the side that does not separate the pair at the level), or 'disagreement' (both separate it, "
                       "in opposite directions)")


@dataclass(kw_only=True)
class DiscriminativePower:
    """Sakai (SIGIR 2006): of the pairs of systems the full set separates, those the subset separates alike."""

    test: str = fld("the paired test and level of both sides (the resolutions' test)")
    pairs: int = fld("pairs of systems compared")
    full_separated: int = fld("pairs the full set separates at the level")
    same_order: int = fld("of those, pairs the subset separates in the same order")
    retained: float | None = fld("same_order / full_separated: the discriminative power the subset keeps (null: the "
                                 "full set separates no pair)")
    reversals: int = fld("of those, pairs the subset separates in the opposite order (significant reversals)")
    subset_only: int = fld("pairs the subset separates and the full set does not")


@dataclass(kw_only=True)
class FamilyBias:
    """Leave-one-family-out: the subset cut again without one pooling family, and how much that family's systems
    gain on it against the systems whose families still pooled (Zobel, SIGIR 1998; Buckley et al., IRJ 2007)."""

    family: str = fld("the family left out of the pool")
    systems: list[str] = fld("its checked systems (made of it alone)")
    reference: list[str] = fld("the checked systems made only of families that still pooled")
    bias: float | None = fld("mean over the queries of the family's systems' change of the metric (cut without it - "
                             "full set) minus the reference systems' change; null: not measured (see note)")
    interval: list[float] | None = fld("[low, high]: 95% percentile-bootstrap interval of bias over the queries")
    change: float | None = fld("the family's systems' own mean change (absolute, not relative)")
    reference_change: float | None = fld("the reference systems' mean change (null: no family left in the pool)")
    queries: int = fld("queries both sides are compared over (the subset's)")
    documents: int = fld("documents of the cut without the family")
    depth_reached: int = fld("its pool depth")
    inexact_queries: int = fld("query x system pairs whose restricted full-set run holds fewer documents of the cut "
                               "than the metric's depth while the run was cut short (too shallow to be exact)")
    note: str | None = optional("why bias is null, or what limits it")
    cut: bool = optional("true: measured on the subset cut again without the family; false: nobody pooled, so "
                         "measured on the subset itself against the systems of the other families", default=True)


@dataclass(kw_only=True)
class SystemBias:
    """A checked system one of whose families did not pool: its change against the systems that did."""

    system: str = fld("the checked system")
    bias: float = fld("mean over the queries of its change (subset - full set) minus the pooled systems' change")
    interval: list[float] | None = fld("[low, high]: 95% percentile-bootstrap interval over the queries")
    change: float = fld("its own mean change (absolute)")


@dataclass(kw_only=True)
class PoolBias:
    """What a system that did not pool should expect from the subset: the pool bias measured by leaving each
    pooling family out in turn, and the bias the checked systems that did not pool show."""

    method: str = fld("how it was measured (the re-cut, the reference systems, the bootstrap)")
    families: list[FamilyBias] = fld("one entry per pooling family")
    expected: float | None = fld("the largest bias over the families: the expected gain of a system that did not "
                                 "pool, relative to those that did (null: no family measured)")
    expected_family: str | None = fld("the family it comes from")
    expected_interval: list[float] | None = fld("its interval")
    unseen: list[SystemBias] = fld("checked systems one of whose families did not pool, with their observed bias",
                                   default_factory=list)
    reproduced: bool | None = fld("the cut repeated with every family gives exactly the subset's documents (false: "
                                  "the pooling systems' runs changed, so the re-cuts are approximate)")
    note: str | None = optional("why nothing was measured, or what limits it")


@dataclass(kw_only=True)
class RankingCheck:
    """Does the subset order systems as the full set does? Kendall's tau between the two orderings."""

    metric: str = fld("the metric systems are ordered by, e.g. NDCG@10")
    split: str = fld("the qrels split")
    systems: list[SystemAgreement] = fld("every system checked, best on the full set first")
    tau: float | None = fld("Kendall's tau-b between the systems' full and subset scores (scipy.stats.kendalltau); "
                            "null when undefined (fewer than two systems, or all scores equal on one side)")
    p_value: float | None = fld("two-sided p-value of tau under independence (scipy)")
    threshold: float = fld("tau below this warns: the subset does not rank like the full set")
    warning: str | None = fld("the warning, null when tau reaches the threshold")
    swapped: list[str] = fld("pairs of systems ordered differently on the subset, with both differences")
    rho: float | None = optional("Spearman's rho between the same two orderings (scipy.stats.spearmanr)")
    tau_interval: list[float] | None = optional("[low, high]: 95% percentile-bootstrap interval of tau, the "
                                                "subset's queries resampled with replacement (full-set scores fixed): "
                                                "the queries' sampling noise on both sides plus the cut's")
    rho_interval: list[float] | None = optional("[low, high]: rho's interval from the same draws as tau_interval")
    paired_tau: float | None = optional("tau between the full set's means over the subset's queries and the "
                                        "subset's means (equals tau when the subset keeps every query)")
    paired_rho: float | None = optional("rho of the same pair of orderings as paired_tau")
    paired_tau_interval: list[float] | None = optional("[low, high]: paired bootstrap interval of tau, both sides' "
                                                       "means over the same resampled subset queries: the fidelity of "
                                                       "the document cut itself")
    paired_rho_interval: list[float] | None = optional("[low, high]: rho's paired interval, same draws")
    ceiling_tau_interval: list[float] | None = optional("[low, high]: the full set's own scores on the same draws "
                                                        "against its fixed means: the query noise the tau_interval of "
                                                        "any subset with these queries inherits")
    ceiling_rho_interval: list[float] | None = optional("[low, high]: rho's self-ceiling, same draws")
    subset_resolution: Resolution | None = optional("what the subset separates (beirx report's paired test)")
    full_resolution: Resolution | None = optional("what the full set separates, by the same test")
    swaps: list[Swap] = optional("every swapped pair with its p-values and verdict", default_factory=list)
    reading: str | None = optional("in one sentence, which differences a user may read from the subset")
    discriminative_power: DiscriminativePower | None = optional("pairs the full set separates that the subset "
                                                                "separates alike, or reversed (Sakai 2006)")
    pool_bias: PoolBias | None = optional("the expected bias of a system that did not pool (leave-one-family-out)")
    full_checksum: str = fld("'sha256:<hex>' of the full dataset checked against")
    subset_checksum: str = fld("'sha256:<hex>' of the subset")
    created: str = fld("UTC time of the check (ISO 8601)", default_factory=utc_now)


@dataclass(kw_only=True)
class SubsetManifest(Artifact):
    """``subset.json``: a subset's provenance and ranking check."""

    SCHEMA = SCHEMA
    KIND = "subset manifest"

    schema_version: str = fld("format identifier", default=SCHEMA)
    kind: str = fld("always 'beirx subset'", default="beirx subset")
    name: str = fld("the subset's dataset name: the source's family name + '-subset'")
    language: str = fld("language of the subset's text (the source's), ISO 639-1")
    source: DatasetSide = fld("the dataset the subset was cut from")
    split: str = fld("the qrels split sampled; the subset holds only this split")
    method: SubsetMethod = fld("how queries and documents were chosen")
    pool: list[PoolSystem] = fld("the pooling systems")
    counts: SubsetCounts = fld("what was kept")
    query_ids: list[str] = fld("the kept queries, in the source's order")
    ranking_check: RankingCheck | None = optional("set by beirx subset check / --check")
    cost: dict[str, Any] | None = optional("set by beirx subset --cost TRANSLATOR: the subset and its full dataset "
                                           "planned as translation dry runs from scratch (translator, target, "
                                           "characters, tokens, segments, estimated_cost_usd at list price for a "
                                           "paid backend, full_dataset, share_of_full)")
    timings: dict[str, float] = fld("seconds per step and in total", default_factory=dict)
    versions: dict[str, str] = fld("Python, platform and package versions", default_factory=dict)
    created: str = fld("UTC time the manifest was written (ISO 8601)", default_factory=utc_now)

    @classmethod
    def _upgrade(cls, data: dict[str, Any], source: str) -> dict[str, Any]:
        if data.get(cls.SCHEMA_FIELD) in READS:
            data = {**data, cls.SCHEMA_FIELD: cls.SCHEMA}
        return super()._upgrade(data, source)

    @property
    def family(self) -> str:
        """The family name of the dataset the subset was cut from (``scifact``)."""
        return self.source.name

    @classmethod
    def path_in(cls, root: Path | str) -> Path:
        return Path(root) / FILENAME

    @classmethod
    def find(cls, root: Path | str) -> "SubsetManifest | None":
        """The manifest of the dataset folder ``root``, or None when it is not a subset (a malformed one raises
        :class:`~beirx.errors.DataError` naming the file and the field)."""
        path = cls.path_in(root)
        return cls.load(path) if path.is_file() else None

    @classmethod
    def behind(cls, root: Path | str) -> tuple[Path, "SubsetManifest"] | None:
        """``(folder, manifest)`` of the subset ``root`` is, or was translated from (a translation of a subset
        names the subset as its source in ``translation.json``); None otherwise. Optional provenance: a
        malformed file is logged and ignored."""
        root = Path(root)
        for _ in range(4):  # a translation of a translation of a subset ... bounded, never a loop
            manifest = cls.load_optional(cls.path_in(root), "ignoring the subset provenance")
            if manifest is not None:
                return root, manifest
            translation = TranslationManifest.load_optional(TranslationManifest.path_in(root))
            if translation is None or not Path(translation.source.path).is_dir():
                return None
            root = Path(translation.source.path)
        return None

