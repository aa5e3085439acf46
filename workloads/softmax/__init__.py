"""Row-wise softmax, one row per program (the Triton tutorial's fused softmax)."""
