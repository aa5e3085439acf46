"""C = A @ B (+ epilogue), Triton's grouped-ordering matmul tutorial kernel."""
