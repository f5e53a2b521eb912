"""Hostile input: what a person's odd files do to oboyu, run for longer than CI can."""
