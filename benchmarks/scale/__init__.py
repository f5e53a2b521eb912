"""Large folders, large files and more than one machine."""
