"""`python -m sundial.console --api URL`: the console command on its own."""

from sundial.console.command import console

console()
