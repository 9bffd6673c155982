"""`explain`: why a GPU pod is placed where it is, or Pending, and the cluster's GPU-memory inventory.

A tool over the live cluster (``python -m explain``). It reads pods and nodes through a
kubeconfig and judges them with ``policy`` (the functions the extender runs, and the rules
the plugin shares through the vectors), so its verdicts are the scheduler's.

Three layers, imports running down: ``facts`` (what is there: ``facts.cluster`` is the only module
that talks to the API server, ``facts.ec2_gpu_data`` the only one that may ask AWS), ``verdicts``
(the facts judged with ``policy``, and the advice), ``output`` (the reports as text and JSON).
``settings`` and ``errors`` are under all three; ``answers`` and ``cli`` on top join them. The demo
calls ``explain.answers.render_pod_explanation``.
"""
