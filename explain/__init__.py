"""`explain`: why a GPU pod is placed where it is, or Pending, and the cluster's GPU-memory inventory.

A tool over the live cluster (``python -m explain``). It reads pods and nodes through a
kubeconfig and judges them with ``policy`` (the functions the extender runs, and the rules
the plugin shares through the vectors), so its verdicts are the scheduler's. The judging
and rendering modules are pure; ``cluster`` is the only one that talks to the API server
and ``ec2_gpu_data`` the only one that may ask AWS. The demo calls
``explain.answers.render_pod_explanation``.
"""
