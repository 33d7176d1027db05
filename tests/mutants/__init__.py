"""Tests that test the tests: named bugs planted in shared/, one at a time, in a scratch copy."""
