"""What is there: the live cluster (``cluster``, the only module that talks to the API server),
EC2's GPU data (``ec2_gpu_data``, the only one that may ask AWS), and what the reports read of
each node, pod and volume. Imports only the tool's settings and errors."""
