"""`python -m bench.scale`: Sundial's own engine on a model of AWS, on a virtual clock."""
