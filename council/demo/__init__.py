"""`council demo`: the main job end to end on the running stack.

``scenario`` holds what the thread says, ``live`` shows runs and independence
groups forming in the terminal, ``story`` drives the steps through the real
services and workers and returns the summary.
"""
