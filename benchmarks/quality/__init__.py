"""Search quality: which choice finds the right file more often."""
