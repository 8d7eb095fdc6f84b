"""`dsstar bench`: answer a benchmark's task set through the same pipeline as `ask`, and score it.

tasks.py reads DABStep JSONL and KramaBench workload.json; dabstep.py and kramabench.py are the two
benchmarks' matching rules; harness.py runs the tasks, writes scored rows and sums them up per level.
"""
