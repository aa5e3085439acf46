"""The pytest plugin and test helpers that let a Triton-style test suite run against this project's compiler
(scripts/external_suite.py starts pytest with them)."""
