"""`python -m sitegen`: the same as the `sitegen` command."""

from sitegen.cli import run

run()
