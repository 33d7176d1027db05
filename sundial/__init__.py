"""Sundial: a typed client of the HTTP API (sundial.client), its bodies (sundial.contract), the
`sundial` command and console, and the service they talk to (sundial.shared, sundial.functions,
sundial.local_stack), which only the Lambda functions and `sundial local` load."""

# The one place the version is written: the distribution's metadata and `sundial --version` read it.
__version__ = "0.2.0"
