"""beirx: build translated BEIR-style retrieval benchmarks and evaluate retrieval models across languages."""

__version__ = "0.1.0"
