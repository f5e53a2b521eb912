"""`python -m oboyu.cli`: the `oboyu` command."""

from oboyu.cli.entry import main

main()
