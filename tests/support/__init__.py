"""Test helpers shared by several test layers."""
