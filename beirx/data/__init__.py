"""BEIR records, reading and writing, validation, the dataset catalogue and downloads."""

from beirx.data.records import Doc, Qrels, Query

__all__ = ["Doc", "Query", "Qrels"]
