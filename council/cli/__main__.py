"""`python -m council.cli`: the same as the `council` console script."""

from council.cli.main import main

main()
