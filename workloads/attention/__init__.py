"""Flash-attention forward (non-causal), Triton-tutorial style online softmax."""
