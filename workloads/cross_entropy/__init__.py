"""Cross-entropy forward: per-row loss from logits [M, V] and int64 targets, online logsumexp over V."""
