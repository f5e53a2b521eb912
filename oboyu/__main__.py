"""`python -m oboyu`: the `oboyu` command."""

from oboyu.cli.handoff import main

main()
