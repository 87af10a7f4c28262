"""Second-stage rerankers, by name. Adding one is a module plus one line here."""

from beirx.registry import Registry

RERANKERS = Registry("reranker", {})
