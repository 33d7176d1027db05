"""Sundial's domain: schedules, jobs, their state machine, the store and dispatch.

Importable and testable without AWS credentials; nothing here reads the environment.
"""
