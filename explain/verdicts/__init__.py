"""What the scheduler decides and why: the facts judged with ``policy`` (fit, score, taints, the
same-zone job's plan), the inventory's problems, and the advice read from them. Pure; imports
``explain.facts``, never the output."""
