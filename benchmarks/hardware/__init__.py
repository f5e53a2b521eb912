"""The embedding engine against the CPU it runs on: engines, instructions, determinism."""
