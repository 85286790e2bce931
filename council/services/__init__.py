"""Use cases that span the ledger and the agents: dispatching and executing runs.

Faces (CLI, HTTP, Celery tasks) call these; queueing is injected as a
:class:`Scheduler`, so nothing here imports Celery.
"""
