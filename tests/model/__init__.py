"""Model-based tests: a Hypothesis state machine over the real store and engine on the emulator."""
