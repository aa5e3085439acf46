"""LayerNorm forward (the Triton tutorial's fused kernel), also writing Mean and Rstd."""
