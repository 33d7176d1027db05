"""The local stack: the same handlers as in AWS, on an embedded emulator on 127.0.0.1."""
