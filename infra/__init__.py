"""The CDK app that deploys Sundial: one construct per concern, names and keys from `shared.constants`."""
