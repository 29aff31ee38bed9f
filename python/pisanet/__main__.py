"""`python -m pisanet ...`: the same as the `pisanet` command."""

from pisanet.cli import app

app()
