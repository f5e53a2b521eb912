"""`python -m oboyu`: the `oboyu` command."""

from oboyu.cli.entry import main

main()
