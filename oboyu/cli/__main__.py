"""`python -m oboyu.cli`: the `oboyu` command."""

from oboyu.cli.handoff import main

main()
