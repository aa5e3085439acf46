"""RMSNorm forward: LayerNorm without the mean, weight only; also writes Rstd."""
