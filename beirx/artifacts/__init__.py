"""Typed artifacts: the results document, the translation manifest, the quality report, the query-generation
manifest, the human review, the subset manifest, the state of a suite build and the report's damage evidence.

Each is a dataclass with a schema version, ``to_dict``/``to_json``/``save`` (atomic) and
``from_dict``/``from_json``/``load`` that validate (errors name the file and the dotted field) and upgrade
older formats; ``json_schema()`` documents the current format
(``beirx schema results|manifest|quality|generation|review|subset|suite|damage``).
Core only: no heavy imports.
"""

from beirx.artifacts.damage import DamageReport
from beirx.artifacts.generation import GenerationManifest
from beirx.artifacts.manifest import TranslationManifest
from beirx.artifacts.quality import QualityReport
from beirx.artifacts.results import ResultsDocument
from beirx.artifacts.review import ReviewDocument
from beirx.artifacts.subset import SubsetManifest
from beirx.artifacts.suite import SuiteState

ARTIFACTS = {"results": ResultsDocument, "manifest": TranslationManifest, "quality": QualityReport,
             "generation": GenerationManifest, "review": ReviewDocument, "subset": SubsetManifest,
             "suite": SuiteState, "damage": DamageReport}

__all__ = ["ARTIFACTS", "DamageReport", "GenerationManifest", "QualityReport", "ResultsDocument", "ReviewDocument", "SubsetManifest",
           "SuiteState",
           "TranslationManifest"]
