"""Retrieval, reranking, fusion, metrics, runs and experiment orchestration."""
