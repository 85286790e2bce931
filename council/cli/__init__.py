"""The command-line face: parse, call a service, render."""
