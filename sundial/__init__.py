"""Sundial for its users: a typed client of the HTTP API and the `sundial` command."""
