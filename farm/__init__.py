"""tilefarm's farm: compile, validate and time kernel sweeps on Ray workers, store and report the results.

`farm.config` (what to run) -> `farm.planner` (jobs with content keys) -> `farm.executor` (local or Ray,
running `farm.worker` on each job) -> `farm.store` (SQLite) -> `farm.report` (tables, JSON, CSV, Markdown).
"""

__version__ = "0.1.0"


class FarmError(Exception):
    """A domain error the CLI shows as one clear message (exit code 1): bad workload name, unknown run, ..."""
