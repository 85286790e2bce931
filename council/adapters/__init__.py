"""Outward adapters: the task queue (Celery on Redis) and other outside services."""
