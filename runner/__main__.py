"""`python -m runner`: the same as the `runner` command."""

from runner.cli import main

main()
