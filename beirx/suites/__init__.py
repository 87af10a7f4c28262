"""Suites: datasets x languages built end to end (subset -> translate -> quality -> publish -> MTEB benchmark).

The orchestrator above the stages: :mod:`~beirx.suites.config` reads the suite file,
:mod:`~beirx.suites.orchestrate` runs the stages through their public entry points and records each finished
step so a rerun resumes. No stage imports it.
"""
