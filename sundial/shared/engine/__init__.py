"""The engine: the scheduler's tick and the worker's attempt, over the store and dispatch."""
