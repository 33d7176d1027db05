"""`make bench`: see bench/__main__.py."""

import os

# The emulators the figures start keep their tables in memory unless a figure is about the state
# directory (bench/local_state.py): no run may leave tables in, or share, the default .sundial/.
os.environ.setdefault("SUNDIAL_EPHEMERAL", "1")
