"""Celery app, routing and thin tasks (issue: council runs on Celery)."""
