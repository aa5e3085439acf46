"""Element-wise vector add, z = x + y (the "hello world" of tile kernels)."""
