"""A worker node: the Celery app and its thin tasks, task functions, enrolment, the per-process runtime, leases, endpoint slots and provenance."""
