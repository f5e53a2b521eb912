"""`python -m oboyu.cli`: the `oboyu` command."""

from oboyu.cli.main import main

main()
