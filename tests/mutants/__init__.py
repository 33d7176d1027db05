"""Tests that test the tests: named bugs planted in sundial/shared/, one at a time, in a scratch copy."""
