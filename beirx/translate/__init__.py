"""Translation stage: segment, deduplicate, translate misses through a backend, reassemble, score quality."""
