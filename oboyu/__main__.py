"""`python -m oboyu`: the `oboyu` command."""

from oboyu.cli.main import main

main()
