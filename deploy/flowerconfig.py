# Flower settings for the farm's head node (`--conf=deploy/flowerconfig.py`).
# Basic auth comes from the environment (FLOWER_BASIC_AUTH=user:password, or
# `farm flower`, which passes FARM_FLOWER_USER/FARM_FLOWER_PASSWORD); never from this file.
address = "0.0.0.0"
port = 5555
# Forget workers that have been offline for ten minutes (lab machines come and go).
purge_offline_workers = 600
# Keep the last 50,000 tasks in memory: several sweeps of a few thousand trials each.
max_tasks = 50000
# Trial payloads are long; the task list shows the short argsrepr the scheduler sets
# ("model · prompt · scenario #repetition").
natural_time = True
tasks_columns = "name,uuid,state,args,received,started,runtime,worker"
