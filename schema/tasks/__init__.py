"""How the processes meet: the broker's queues and Celery configuration, task functions found by
name, and the typed messages every task takes and gives."""
