"""The `sundial` command's API commands, on sundial.client."""
