"""`farm`: the command line (Typer). One file per command; the work lives in farm's modules."""
