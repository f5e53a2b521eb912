"""How fast oboyu searches, indexes, extracts, writes and embeds."""
