"""The pod admission webhook (``--role webhook``): the policy's minimum as a required node affinity."""
