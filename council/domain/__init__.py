"""Pure values and decisions: no I/O, no SQL, no network."""
