"""The HTTP API's contract: every request and answer body, and the words they use.

Pure pydantic: nothing here imports the store, the engine, target delivery or an AWS SDK, so the
client, the `sundial` command and the console read these bodies without loading the service, and
the service answers with them (sundial/shared/service/views.py builds them from domain objects).
"""
