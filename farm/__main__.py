"""`python -m farm ...` is the `farm` command (for machines where the package is not installed)."""
from farm.cli.main import app

app(prog_name="farm")
